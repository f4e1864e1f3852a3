/**
 * The processes and servers of `npm run bench:webhooks` (test/bench/webhooks.ts): private
 * PostgreSQL, Redis and Temporal dev server in a temporary folder; the events service, BENCH_REPLICAS
 * dispatchers and as many workers, each its own process (the dispatcher's WEBHOOK_* knobs pass
 * through; BENCH_CPU_PROF: the dispatchers and workers write V8 CPU profiles there); the CPU of each
 * kind read from /proc; and the bench's event sender.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Client, Connection } from '@temporalio/client';
import { parseConfig, type Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { cpuSecondsByName } from './process-cpu.js';
import { memoryOf } from './provision-figures.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const TASK_QUEUE = 'bench-webhooks';
/** The dispatcher's knobs and the events service's EVENTS_NICE, passed to the platform processes when given. */
const KNOBS = [
  'EVENTS_NICE',
  'WEBHOOK_ENDPOINT_CONCURRENCY',
  'WEBHOOK_DISPATCH_BATCH',
  'WEBHOOK_DISPATCH_PARALLEL',
  'WEBHOOK_MAX_IN_FLIGHT',
  'WEBHOOK_RETRY_SCHEDULE',
  // tracing on for a run with it (docs/operators.md#tracing): e.g. OTEL_TRACES_EXPORTER=zipkin
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_ZIPKIN_ENDPOINT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_TRACES_SAMPLER_ARG',
  // the log store for a run with it: every process ships its lines, the worker mirrors the execution log
  'LOG_STORE_URL',
];

export interface WebhookBench {
  pool: Pool;
  /** A connection to the events stream's Redis (the burst breakdown reads the stream's entries). */
  streamRedis: Redis;
  cfg: Config;
  /** CPU seconds so far of each kind of process (dispatcher, worker, events service, temporal, postgresql, redis). */
  cpuNow: () => Record<string, number>;
  /** Peak resident memory so far of the dispatcher, the worker and the events service, in MB (the Kubernetes requests are sized from it). */
  peakMemoryMb: () => Record<string, number>;
  /** Posts event `id` (an invoice.posted of workspace `slug`) to the events service. */
  postEvent: (agent: http.Agent, slug: string, id: string, n: number) => Promise<void>;
  /** Closes the bench's own connections (the processes and servers stay up until `stopWebhookBench`). */
  disconnect(): Promise<void>;
}

const dir = throwAwayDir('plana-bench-webhooks-');
const children: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The environment of the platform processes: the throw-away servers, loopback receivers allowed, the knobs given. */
function platformEnv(urls: { pg: string; erp: string; redis: string; temporal: string }, ports: number[]) {
  const [eventsPort, notificationsPort] = ports;
  return {
    PATH: process.env.PATH!,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    TEMPORAL_LOG_LEVEL: 'WARN',
    DATABASE_URL: urls.pg,
    ERP_DATABASE_URL: urls.erp,
    REDIS_URL: urls.redis,
    TEMPORAL_ADDRESS: urls.temporal,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    EVENTS_STREAM: 'bench-webhooks',
    NOTIFICATIONS_URL: `http://127.0.0.1:${notificationsPort}`,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWED_ADDRESSES: '127.0.0.1/32',
    DATA_DIR: dir,
    ...Object.fromEntries(KNOBS.flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))),
  };
}

/** Starts one platform process (`file`) with `env`; BENCH_CPU_PROF profiles the dispatchers and workers. */
function runProcess(name: string, file: string, env: Record<string, string>) {
  const profile = process.env.BENCH_CPU_PROF && (name === 'dispatcher' || name === 'worker');
  const child = spawn(
    process.execPath,
    [
      ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      '--import',
      'tsx',
      path.join(root, file),
    ],
    { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  children.push(child);
  return child;
}

/** Waits until `ready` answers true, looking every `everyMs`. */
async function waitUntil(ready: () => Promise<boolean>, everyMs: number) {
  while (!(await ready())) await sleep(everyMs);
}

/** The servers, the schema, the service keys and the platform processes, ready: the workers poll the task queue. */
export async function startWebhookBench(replicas: number, step: (s: string) => void): Promise<WebhookBench> {
  step('starting PostgreSQL, Redis and the Temporal dev server');
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  const pool = createPool(pg.url, 4);
  const streamRedis = new Redis(redis.url);
  await migrate(pool);
  const urls = { pg: pg.url, erp: pg.urlFor('postgres'), redis: redis.url, temporal: temporal.address };
  const env: Record<string, string> = platformEnv(urls, await Promise.all([freePort(), freePort()]));
  const cfg = parseConfig(env);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  const eventsKey = (await secrets.current('worker', 'events')).key;

  step('starting the events service, the webhook dispatcher and the worker (own processes)');
  const events = runProcess('events service', 'services/events/server.ts', env);
  const workers = Array.from({ length: replicas }, () => runProcess('worker', 'worker/index.ts', env));
  await waitUntil(
    () =>
      fetch(`${cfg.EVENTS_URL}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    200,
  );
  const dispatchers = Array.from({ length: replicas }, () =>
    runProcess('dispatcher', 'services/webhooks/dispatcher.ts', env),
  );
  // the workers are ready once each polls the task queue
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  await waitUntil(async () => {
    const d = await client.connection.workflowService
      .describeTaskQueue({ namespace: 'default', taskQueue: { name: TASK_QUEUE } })
      .catch(() => undefined);
    return new Set(d?.pollers?.map((p) => p.identity)).size >= replicas;
  }, 300);
  await sleep(1_000);

  const pidFile = (name: string) => Number(readFileSync(path.join(dir, name, `${name}.pid`), 'utf8'));
  const pids = () => ({
    dispatcher: dispatchers.map((d) => d.pid!),
    worker: workers.map((w) => w.pid!),
    'events service': [events.pid!],
    temporal: [pidFile('temporal')],
    postgresql: [pidFile('postgres')],
    redis: [pidFile('redis')],
  });
  return {
    pool,
    streamRedis,
    cfg,
    cpuNow: () => cpuSecondsByName(pids()),
    peakMemoryMb: () =>
      Object.fromEntries(
        (['dispatcher', 'worker', 'events service'] as const).map((name) => [
          name,
          Math.max(...pids()[name].map((pid) => memoryOf(pid).peakMb)),
        ]),
      ),
    postEvent: (agent, slug, id, n) => postEvent(cfg.EVENTS_URL, eventsKey, agent, { slug, id, n }),
    async disconnect() {
      await client.connection.close();
      streamRedis.disconnect();
      await pool.end();
    },
  };
}

/** Posts event `id` (an invoice.posted of workspace `slug`) to the events service; resolves on its 202. */
function postEvent(eventsUrl: string, key: string, agent: http.Agent, e: { slug: string; id: string; n: number }) {
  return new Promise<void>((resolve, reject) => {
    const req = http.request(
      `${eventsUrl}/api/v1/events`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/cloudevents+json', 'x-api-key': key },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 202 ? resolve() : reject(new Error(`events service answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(
      JSON.stringify({
        specversion: '1.0',
        id: e.id,
        source: '/bench',
        type: 'invoice.posted',
        time: new Date().toISOString(),
        workspace: e.slug,
        data: { invoice: `INV/${e.n}`, amount: 42, note: 'x'.repeat(200) },
      }),
    );
  });
}

/** Stops the platform processes (SIGTERM, then SIGKILL after a second) and the servers, and removes their folder. */
export async function stopWebhookBench(): Promise<void> {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await sleep(1_000);
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
