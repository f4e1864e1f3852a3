/**
 * The scenarios of `npm run bench:webhooks` (test/bench/webhooks.ts): E events × N endpoints with an
 * exact share of first attempts answered 500, sent with BENCH_IN_FLIGHT requests in flight or paced
 * at a rate; one loopback receiver per endpoint answering 204 and verifying every delivery with the
 * public `standardwebhooks` library. A run gives the raw figures (webhook-report.ts prints them).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { EndpointRepository } from '../../domain/webhooks/endpoints.js';
import { messageIdOf } from '../../domain/webhooks/signing.js';
import type { WebhookBench } from './webhook-bench-processes.js';
import { burstBreakdown } from './webhook-burst-breakdown.js';

export interface Scenario {
  events: number;
  endpoints: number;
  /** The share of first attempts answered 500, in %. */
  failing: number;
  /** Events per second when paced; undefined: as fast as the requests in flight allow. */
  rate: number | undefined;
  warmUp: boolean;
}

/** BENCH_SCENARIOS: `<events>x<endpoints>@<failing %>[/<events per second>]`, comma-separated. */
export function parseScenarios(spec: string): Scenario[] {
  return spec
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => {
      const m = /^(\d+)x(\d+)@(\d+(?:\.\d+)?)(?:\/(\d+))?$/.exec(s.trim());
      if (!m) throw new Error(`BENCH_SCENARIOS: "${s}" is not <events>x<endpoints>@<failing %>[/<events per second>]`);
      return {
        events: Number(m[1]),
        endpoints: Number(m[2]),
        failing: Number(m[3]),
        rate: m[4] ? Number(m[4]) : undefined,
        warmUp: false,
      };
    });
}

/** Unreported rounds of 1,000 events at one endpoint; from the second on 1 % fail (the retry path warms up too). */
export const warmUps = (rounds: number): Scenario[] =>
  Array.from({ length: rounds }, (_, i) => ({
    events: 1000,
    endpoints: 1,
    failing: i === 0 ? 0 : 1,
    rate: undefined,
    warmUp: true,
  }));

/** What a scenario's run measured (times: performance.now() of this process). */
export interface ScenarioRun {
  sc: Scenario;
  expected: number;
  sendSeconds: number;
  /** First send → last first delivery, in seconds. */
  seconds: number;
  /** Event → first verified delivery, ascending, ms. */
  latencies: number[];
  delivered: number;
  verifyFailures: number;
  /** Failed attempt → delivery on its retry, ascending, ms. */
  retried: number[];
  /** CPU seconds by kind of process over the scenario. */
  cpu: Record<string, number>;
  /** CPU seconds of this process (the sender and the receivers). */
  selfSeconds: number;
  /** The burst breakdown's lines (one endpoint, not a warm-up). */
  breakdown: string[];
}

/** What the receivers saw (keys: `<endpoint index>:<message id>`). */
interface Receipts {
  firstDelivered: Map<string, number>;
  /** When the receiver answered 500 to a message's first attempt. */
  failedAt: Map<string, number>;
  verifyFailures: number;
  lastDelivery: number;
  /** TCP connections the receivers accepted. */
  connections: number;
}

/** The messages failing their first attempt, exactly the share: event n when ⌊(n+1)·share⌋ > ⌊n·share⌋ (every 100th at 1 %). */
function failingMessages(sc: Scenario, slug: string): Set<string> {
  const failing = new Set<string>();
  for (let n = 0; n < sc.events; n++) {
    if (Math.floor(((n + 1) * sc.failing) / 100) > Math.floor((n * sc.failing) / 100))
      failing.add(messageIdOf('/bench', `bench-${slug}-${n}`));
  }
  return failing;
}

/** Receiver `i`: 500 to a failing message's first attempt, else verifies and answers 204. */
function receiver(i: number, failing: Set<string>, seen: Receipts, verifier: { webhook?: Webhook }) {
  const seenFailure = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      if (failing.has(id) && !seenFailure.has(id)) {
        seenFailure.add(id);
        seen.failedAt.set(`${i}:${id}`, performance.now());
        res.writeHead(500).end();
        return;
      }
      try {
        verifier.webhook!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      } catch {
        seen.verifyFailures++;
      }
      const key = `${i}:${id}`;
      if (!seen.firstDelivered.has(key)) {
        const now = performance.now();
        seen.firstDelivered.set(key, now);
        seen.lastDelivery = now;
      }
      res.writeHead(204).end();
    });
  });
  server.on('connection', () => seen.connections++);
  return server;
}

/** Workspace `slug` with the scenario's endpoints, each with its listening receiver. */
async function receivers(bench: WebhookBench, sc: Scenario, slug: string, failing: Set<string>, seen: Receipts) {
  const { pool, cfg } = bench;
  const repo = new EndpointRepository(pool, cfg.SECRETS_KEY);
  const ws = (
    await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $1) RETURNING id', [slug])
  ).rows[0]!.id;
  const servers: http.Server[] = [];
  for (let i = 0; i < sc.endpoints; i++) {
    const verifier: { webhook?: Webhook } = {};
    const server = receiver(i, failing, seen, verifier);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { secret } = await repo.create(ws, {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    });
    verifier.webhook = new Webhook(secret);
    servers.push(server);
  }
  return servers;
}

/** Sends the scenario's events, `inFlight` at a time (or paced), recording each send's time by message id. */
async function sendEvents(bench: WebhookBench, sc: Scenario, slug: string, inFlight: number, start: number) {
  const sentAt = new Map<string, number>();
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < sc.events) {
        const n = next++;
        if (sc.rate) {
          const wait = start + (n * 1000) / sc.rate - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
        const id = `bench-${slug}-${n}`;
        sentAt.set(messageIdOf('/bench', id), performance.now());
        await bench.postEvent(agent, slug, id, n);
      }
    }),
  );
  return { sentAt, agent };
}

/** Runs one scenario: receivers up, events sent, first deliveries awaited (60 s at most), CPU read, receivers down. */
export async function runScenario(
  bench: WebhookBench,
  sc: Scenario,
  inFlight: number,
  step: (s: string) => void,
  title: string,
): Promise<ScenarioRun> {
  const seen: Receipts = {
    firstDelivered: new Map(),
    failedAt: new Map(),
    verifyFailures: 0,
    lastDelivery: 0,
    connections: 0,
  };
  const slug = `bench-${randomUUID().slice(0, 8)}`;
  const failing = failingMessages(sc, slug);
  const servers = await receivers(bench, sc, slug, failing, seen);
  // the dispatcher reads a workspace's endpoints once a second
  await new Promise((r) => setTimeout(r, 1_200));

  step(`${sc.warmUp ? 'warm-up: ' : ''}${title}`);
  const before = bench.cpuNow();
  const selfBefore = process.cpuUsage();
  const start = performance.now();
  const { sentAt, agent } = await sendEvents(bench, sc, slug, inFlight, start);
  const sendSeconds = (performance.now() - start) / 1000;
  const expected = sc.events * sc.endpoints;
  const deadline = Date.now() + 60_000;
  while (seen.firstDelivered.size < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const after = bench.cpuNow();
  const self = process.cpuUsage(selfBefore);
  agent.destroy();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  const messageOf = (key: string) => key.slice(key.indexOf(':') + 1);
  return {
    sc,
    expected,
    sendSeconds,
    seconds: (seen.lastDelivery - start) / 1000,
    latencies: [...seen.firstDelivered].map(([key, at]) => at - sentAt.get(messageOf(key))!).sort((a, b) => a - b),
    delivered: seen.firstDelivered.size,
    verifyFailures: seen.verifyFailures,
    retried: [...seen.failedAt]
      .flatMap(([key, at]) => (seen.firstDelivered.has(key) ? [seen.firstDelivered.get(key)! - at] : []))
      .sort((a, b) => a - b),
    cpu: Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!])),
    selfSeconds: (self.user + self.system) / 1e6,
    breakdown: await breakdownOf(bench, sc, sentAt, seen, failing),
  };
}

/** Stage by stage (one endpoint: a message has one first attempt), the messages delivered at their first attempt. */
async function breakdownOf(
  bench: WebhookBench,
  sc: Scenario,
  sentAt: Map<string, number>,
  seen: Receipts,
  failing: Set<string>,
): Promise<string[]> {
  if (sc.warmUp || sc.endpoints > 1) return [];
  const wall = (t: number) => performance.timeOrigin + t;
  return burstBreakdown(bench.pool, bench.streamRedis, bench.cfg.EVENTS_STREAM, {
    sentAt: new Map([...sentAt].map(([id, t]) => [id, wall(t)])),
    deliveredAt: new Map(
      [...seen.firstDelivered].flatMap(([key, t]) => {
        const id = key.slice(key.indexOf(':') + 1);
        return key.startsWith('0:') && !failing.has(id) ? [[id, wall(t)] as const] : [];
      }),
    ),
    connections: seen.connections,
  });
}
