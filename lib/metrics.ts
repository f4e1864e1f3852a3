/**
 * The platform's Prometheus metrics: one registry per process (prom-client's default one), the
 * metrics every part records into it, the Fastify plugin that counts and times each HTTP request by
 * route template, and the small server that answers `GET /metrics` on METRICS_PORT. The Temporal
 * SDK's own worker metrics are served by its runtime on TEMPORAL_METRICS_PORT (worker/index.ts).
 * The names and labels are listed in docs/operators.md ("Metrics").
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import client from 'prom-client';

export const metricsRegistry = client.register;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const httpDuration = new client.Histogram({
  name: 'plana_http_request_duration_seconds',
  help: 'Time from a request received to its answer sent, by service, method, route template and status code',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS,
});

/** The request counts, read from the histogram's counts at each scrape (one observation per request on the hot path). */
new client.Counter({
  name: 'plana_http_requests_total',
  help: 'HTTP requests answered, by service, method, route template and status code',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  async collect() {
    this.reset();
    for (const v of (await httpDuration.get()).values)
      if (v.metricName === 'plana_http_request_duration_seconds_count') this.inc(v.labels, v.value);
  },
});

/** Webhook attempts recorded (domain/webhooks/deliveries.ts), by outcome (`ok`, `http`, `timeout`, …) and trigger. */
export const webhookAttempts = new client.Counter({
  name: 'plana_webhook_attempts_total',
  help: 'Webhook delivery attempts recorded, by outcome and by what made the attempt (dispatcher, retry, replay, test)',
  labelNames: ['outcome', 'trigger'] as const,
});

/** Activity durations (provisioning steps among them), recorded by the worker's activity interceptor. */
export const activityDuration = new client.Histogram({
  name: 'plana_activity_duration_seconds',
  help: 'Time an activity attempt ran in the worker (the provisioning steps among them), by activity type and outcome',
  labelNames: ['activity', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
});

/** How long an activity attempt waited in Temporal's task queue before a worker started it. */
export const activityWait = new client.Histogram({
  name: 'plana_activity_schedule_to_start_seconds',
  help: 'Time an activity attempt waited from scheduled to started (task-queue wait), by activity type',
  labelNames: ['activity'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});

/** The route label of a request: its route template (never the raw URL, which holds ids and tokens). */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions?.url ?? 'unmatched';
}

type HttpLabel = 'service' | 'method' | 'route' | 'status';

/**
 * Counts and times every request of the app it is registered on, labelled `service` (the process
 * part: `account-api`, `events`, …). The labelled series are kept per method, route and status so
 * that a request costs a map lookup and one observation (its count is the histogram's).
 */
export const httpMetrics = fp<{ service: string }>(
  async (app: FastifyInstance, { service }: { service: string }) => {
    const series = new Map<string, client.Histogram.Internal<HttpLabel>>();
    const seriesOf = (method: string, route: string, status: number) => {
      const key = `${method} ${status} ${route}`;
      let s = series.get(key);
      if (!s) {
        s = httpDuration.labels(service, method, route, String(status));
        series.set(key, s);
      }
      return s;
    };
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      seriesOf(request.method, routeOf(request), reply.statusCode).observe(reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'plana-http-metrics' },
);

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

let defaultMetricsOn = false;

/**
 * Serves the registry at `GET /metrics` (Prometheus text format) on host:port (port 0: any free
 * port), with the process's own figures (CPU, memory, event-loop lag, GC) added once per process.
 */
export async function startMetricsServer({ port, host }: { port: number; host: string }): Promise<MetricsServer> {
  if (!defaultMetricsOn) {
    client.collectDefaultMetrics({ register: metricsRegistry });
    defaultMetricsOn = true;
  }
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the metrics are at GET /metrics\n');
      return;
    }
    metricsRegistry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The metrics server of a process whose configuration sets METRICS_PORT; none otherwise. */
export async function startConfiguredMetricsServer(cfg: {
  METRICS_PORT?: number;
  METRICS_HOST: string;
}): Promise<MetricsServer | undefined> {
  if (cfg.METRICS_PORT === undefined) return undefined;
  return startMetricsServer({ port: cfg.METRICS_PORT, host: cfg.METRICS_HOST });
}

/** What the queue gauges read at each scrape: a Redis stream and one consumer group of it. */
export interface WatchedStreamGroup {
  redis: { xlen(key: string): Promise<number>; xinfo(sub: 'GROUPS', key: string): Promise<unknown> };
  stream: string;
  group: string;
}

const watchedGroups = new Set<WatchedStreamGroup>();

/** A consumer group's figures from XINFO GROUPS: entries read but not acknowledged, and entries not read yet. */
async function groupFigures(w: WatchedStreamGroup): Promise<{ pending: number; lag: number } | undefined> {
  const groups = (await w.redis.xinfo('GROUPS', w.stream)) as unknown[][];
  for (const fields of groups) {
    const info = new Map<string, unknown>();
    for (let i = 0; i + 1 < fields.length; i += 2) info.set(String(fields[i]), fields[i + 1]);
    if (info.get('name') === w.group)
      return { pending: Number(info.get('pending')), lag: Number(info.get('lag') ?? 0) };
  }
  return undefined;
}

new client.Gauge({
  name: 'plana_events_stream_length',
  help: 'Entries in the events stream (XLEN)',
  labelNames: ['stream'] as const,
  async collect() {
    this.reset();
    for (const w of watchedGroups) this.set({ stream: w.stream }, await w.redis.xlen(w.stream));
  },
});

new client.Gauge({
  name: 'plana_events_group_pending',
  help: "Entries a consumer group read but has not acknowledged yet (the group's pending entries list)",
  labelNames: ['stream', 'group'] as const,
  async collect() {
    this.reset();
    for (const w of watchedGroups) {
      const figures = await groupFigures(w);
      if (figures) this.set({ stream: w.stream, group: w.group }, figures.pending);
    }
  },
});

new client.Gauge({
  name: 'plana_events_group_lag',
  help: 'Entries of the stream a consumer group has not read yet',
  labelNames: ['stream', 'group'] as const,
  async collect() {
    this.reset();
    for (const w of watchedGroups) {
      const figures = await groupFigures(w);
      if (figures) this.set({ stream: w.stream, group: w.group }, figures.lag);
    }
  },
});

/** Adds a stream's consumer group to the queue gauges until the returned function is called. */
export function watchStreamGroup(w: WatchedStreamGroup): () => void {
  watchedGroups.add(w);
  return () => watchedGroups.delete(w);
}

/** The TenantClient controller's reconciles (services/tenant-controller), in controller-runtime's terms. */
export const tenantControllerReconciles = new client.Counter({
  name: 'plana_tenant_controller_reconciles_total',
  help: 'TenantClient reconciles, by result (success, error)',
  labelNames: ['result'] as const,
});

export const tenantControllerReconcileErrors = new client.Counter({
  name: 'plana_tenant_controller_reconcile_errors_total',
  help: 'TenantClient reconciles that failed (each is retried with its own backoff)',
});

export const tenantControllerReconcileDuration = new client.Histogram({
  name: 'plana_tenant_controller_reconcile_duration_seconds',
  help: 'Time one TenantClient reconcile took',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});

const controllerQueues = new Set<() => number>();

new client.Gauge({
  name: 'plana_tenant_controller_queue_depth',
  help: 'TenantClients waiting in the controller work queue (not counting retries waiting for their backoff)',
  collect() {
    this.set([...controllerQueues].reduce((sum, depth) => sum + depth(), 0));
  },
});

/** Adds a controller's work queue to the depth gauge until the returned function is called. */
export function watchControllerQueue(depth: () => number): () => void {
  controllerQueues.add(depth);
  return () => controllerQueues.delete(depth);
}
