/**
 * `npm run bench:webhooks`: webhook delivery measured the way ANCHORS.md measured Svix and the
 * one-workflow-per-delivery Temporal design. Private PostgreSQL, Redis and Temporal dev server in
 * a temporary folder; the events service, the webhook dispatcher and the Temporal worker each as
 * their own process; one loopback HTTP receiver per endpoint answering 204 and verifying every
 * delivery with the public `standardwebhooks` library; the bench posts events to the events
 * service with 32 requests in flight.
 *
 * Per scenario (E events × N endpoints, an exact share of first attempts answered 500): deliveries/s
 * (first verified 2xx per message × endpoint, from the first send to the last first delivery),
 * event → delivered p50/p99 (from the send of the event), how long after the failed attempt the
 * failed ones were delivered, and CPU per delivery from /proc for the dispatcher, worker, events
 * service, Temporal, PostgreSQL and Redis (and, apart, the bench's own sender + receivers), each
 * printed beside the Svix row of ANCHORS.md; with one endpoint, where a message's time went, stage by
 * stage (webhook-burst-breakdown.ts).
 *
 * BENCH_SCENARIOS ("2000x1@0,2000x1@0/420,1000x4@0,2000x1@1,2000x1@1/420,2000x1@10,2000x1@10/420" by default:
 * events x endpoints @ failing % [/ events per second: paced instead of as fast as BENCH_IN_FLIGHT
 * allows; 420/s is the rate Svix sustained]), BENCH_REPLICAS (1: how many dispatchers and how many
 * workers, each its own process; their CPU is summed per kind), BENCH_IN_FLIGHT (32), BENCH_WARM_UP (2 unreported rounds
 * of 1,000 events first, the second with 1 % failing) and BENCH_CPU_PROF (a folder:
 * the dispatcher and the worker write V8 CPU profiles there) tune it; WEBHOOK_ENDPOINT_CONCURRENCY,
 * WEBHOOK_DISPATCH_BATCH, WEBHOOK_DISPATCH_PARALLEL, WEBHOOK_MAX_IN_FLIGHT and WEBHOOK_RETRY_SCHEDULE
 * pass to the dispatcher and the worker.
 *
 * Then "receiver down, messages waiting, then back" (webhook-outage.ts): BENCH_OUTAGE (10m; 0 skips it,
 * a shorter one for a quick run, e.g. BENCH_OUTAGE=30s WEBHOOK_RETRY_SCHEDULE=5s,20s,40s,2m,5m),
 * BENCH_OUTAGE_MESSAGES (5000), BENCH_OUTAGE_WAIT (2h: how long to wait for the drain). With the
 * default schedule the messages come back on their 30-minute retry.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { EndpointRepository } from '../../domain/webhooks/endpoints.js';
import { messageIdOf } from '../../domain/webhooks/signing.js';
import { percentile } from './percentile.js';
import { cpuSecondsByName } from './process-cpu.js';
import { burstBreakdown } from './webhook-burst-breakdown.js';
import { OUTAGE_MS, outageScenario } from './webhook-outage.js';
import { Redis } from 'ioredis';

const root = fileURLToPath(new URL('../../', import.meta.url));
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 32);
const WARM_UP_ROUNDS = Number(process.env.BENCH_WARM_UP ?? 2);
/** How many dispatchers and how many workers run (each its own process). */
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 1);
/** The outage scenario: how long the receiver is down (0: skip it), how many messages, how long to wait for the drain. */
const scenarios = (
  process.env.BENCH_SCENARIOS ?? '2000x1@0,2000x1@0/420,1000x4@0,2000x1@1,2000x1@1/420,2000x1@10,2000x1@10/420'
)
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
    };
  });
/** The Svix rows, measured with the anchor harness in one window with ours (see the file for when and how). */
const svixAnchor = JSON.parse(readFileSync(new URL('./anchors/svix-webhooks.json', import.meta.url), 'utf8')) as {
  measured: string;
  scenarios: Record<string, string>;
};
const dir = throwAwayDir('plana-bench-webhooks-');
const children: ChildProcess[] = [];
const step = (s: string) => console.error(`[bench:webhooks] ${s}`);

const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
try {
  step('starting PostgreSQL, Redis and the Temporal dev server');
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  const pool = createPool(pg.url, 4);
  const streamRedis = new Redis(redis.url);
  await migrate(pool);
  const [eventsPort, notificationsPort] = await Promise.all([freePort(), freePort()]);
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    TEMPORAL_LOG_LEVEL: 'WARN',
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'bench-webhooks',
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    EVENTS_STREAM: 'bench-webhooks',
    NOTIFICATIONS_URL: `http://127.0.0.1:${notificationsPort}`,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWED_ADDRESSES: '127.0.0.1/32',
    DATA_DIR: dir,
    // the dispatcher's knobs, when given
    ...Object.fromEntries(
      [
        'WEBHOOK_ENDPOINT_CONCURRENCY',
        'WEBHOOK_DISPATCH_BATCH',
        'WEBHOOK_DISPATCH_PARALLEL',
        'WEBHOOK_MAX_IN_FLIGHT',
        'WEBHOOK_HANDOFF_CONCURRENCY',
        'WEBHOOK_RETRY_SCHEDULE',
      ].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])),
    ),
  };
  const cfg = parseConfig(env);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  const eventsKey = (await secrets.current('worker', 'events')).key;

  const run = (name: string, file: string) => {
    const child = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_CPU_PROF && (name === 'dispatcher' || name === 'worker')
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
          : []),
        '--import',
        'tsx',
        path.join(root, file),
      ],
      { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    children.push(child);
    return { name, child };
  };
  step('starting the events service, the webhook dispatcher and the worker (own processes)');
  const events = run('events service', 'services/events/server.ts');
  const workers = Array.from({ length: REPLICAS }, () => run('worker', 'worker/index.ts'));
  for (;;) {
    if (
      await fetch(`${cfg.EVENTS_URL}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const dispatchers = Array.from({ length: REPLICAS }, () => run('dispatcher', 'services/webhooks/dispatcher.ts'));
  // the workers are ready once each polls the task queue
  const { Connection, Client } = await import('@temporalio/client');
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  for (;;) {
    const d = await client.connection.workflowService
      .describeTaskQueue({ namespace: 'default', taskQueue: { name: 'bench-webhooks' } })
      .catch(() => undefined);
    if (new Set(d?.pollers?.map((p) => p.identity)).size >= REPLICAS) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  await new Promise((r) => setTimeout(r, 1_000));

  const pidsOf = (): Record<string, number[]> => ({
    dispatcher: dispatchers.map((d) => d.child.pid!),
    worker: workers.map((w) => w.child.pid!),
    'events service': [events.child.pid!],
    temporal: [Number(readFileSync(path.join(dir, 'temporal', 'temporal.pid'), 'utf8'))],
    postgresql: [Number(readFileSync(path.join(dir, 'postgres', 'postgres.pid'), 'utf8'))],
    redis: [Number(readFileSync(path.join(dir, 'redis', 'redis.pid'), 'utf8'))],
  });
  const cpuNow = () => cpuSecondsByName(pidsOf());

  const repo = new EndpointRepository(pool, cfg.SECRETS_KEY);
  const results: string[] = [];
  /** Posts event `id` (an invoice.posted of workspace `slug`) to the events service. */
  const postEvent = (agent: http.Agent, slug: string, id: string, n: number) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        `${cfg.EVENTS_URL}/api/v1/events`,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/cloudevents+json', 'x-api-key': eventsKey },
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
          id,
          source: '/bench',
          type: 'invoice.posted',
          time: new Date().toISOString(),
          workspace: slug,
          data: { invoice: `INV/${n}`, amount: 42, note: 'x'.repeat(200) },
        }),
      );
    });

  // warm-up rounds first (JIT of every Node process, connections, caches), not reported: the first
  // burst after a start ran at a third of the rate of the next one (the events service spent 0.3 ms
  // CPU per event instead of 0.05); from the second on 1 % fail, so the retry path (Temporal client,
  // worker, workflow bundle) is warm too (the first scenario with failures had p50 0.3 s otherwise)
  const warmUps = Array.from({ length: WARM_UP_ROUNDS }, (_, i) => ({
    events: 1000,
    endpoints: 1,
    failing: i === 0 ? 0 : 1,
    rate: undefined,
    warmUp: true,
  }));
  for (const sc of [...warmUps, ...scenarios.map((x) => ({ ...x, warmUp: false }))]) {
    const slug = `bench-${randomUUID().slice(0, 8)}`;
    const ws = (
      await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $1) RETURNING id', [slug])
    ).rows[0]!.id;
    const sentAt = new Map<string, number>();
    const firstDelivered = new Map<string, number>();
    /** When the receiver answered 500 to a message's first attempt (key: endpoint:message). */
    const failedAt = new Map<string, number>();
    let verifyFailures = 0;
    let lastDelivery = 0;
    const servers: http.Server[] = [];
    // the failing share, exactly: event n fails its first attempt when ⌊(n+1)·share⌋ > ⌊n·share⌋ (every 100th at 1 %)
    const failing = new Set<string>();
    for (let n = 0; n < sc.events; n++) {
      if (Math.floor(((n + 1) * sc.failing) / 100) > Math.floor((n * sc.failing) / 100))
        failing.add(messageIdOf('/bench', `bench-${slug}-${n}`));
    }
    for (let i = 0; i < sc.endpoints; i++) {
      const seenFailure = new Set<string>();
      const verifier: { webhook?: Webhook } = {};
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const id = String(req.headers['webhook-id']);
          // the failing share: the first attempt of a message whose id hashes below the share
          if (failing.has(id) && !seenFailure.has(id)) {
            seenFailure.add(id);
            failedAt.set(`${i}:${id}`, performance.now());
            res.writeHead(500).end();
            return;
          }
          try {
            verifier.webhook!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
          } catch {
            verifyFailures++;
          }
          const key = `${i}:${id}`;
          if (!firstDelivered.has(key)) {
            const now = performance.now();
            firstDelivered.set(key, now);
            lastDelivery = now;
          }
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const { secret } = await repo.create(ws, {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      });
      verifier.webhook = new Webhook(secret);
      servers.push(server);
    }
    // the dispatcher reads a workspace's endpoints once a second
    await new Promise((r) => setTimeout(r, 1_200));

    const title = `${sc.events} events × ${sc.endpoints} endpoint(s), ${sc.failing} % failing first attempts, ${sc.rate ? `paced at ${sc.rate} events/s` : `${IN_FLIGHT} in flight`}`;
    step(`${sc.warmUp ? 'warm-up: ' : ''}${title}`);
    const before = cpuNow();
    const selfBefore = process.cpuUsage();
    const start = performance.now();
    let next = 0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < sc.events) {
          const n = next++;
          if (sc.rate) {
            const wait = start + (n * 1000) / sc.rate - performance.now();
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          }
          const id = `bench-${slug}-${n}`;
          sentAt.set(messageIdOf('/bench', id), performance.now());
          await postEvent(agent, slug, id, n);
        }
      }),
    );
    const sendSeconds = (performance.now() - start) / 1000;
    const expected = sc.events * sc.endpoints;
    const deadline = Date.now() + 60_000;
    while (firstDelivered.size < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const after = cpuNow();
    const self = process.cpuUsage(selfBefore);
    agent.destroy();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }

    const latencies = [...firstDelivered]
      .map(([key, at]) => at - sentAt.get(key.slice(key.indexOf(':') + 1))!)
      .sort((a, b) => a - b);
    const pct = (q: number) => percentile(latencies, q);
    const seconds = (lastDelivery - start) / 1000;
    const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!]));
    const cpuTotal = Object.values(cpu).reduce((a, b) => a + b, 0);
    const perDelivery = (s: number) => ((s * 1000) / Math.max(1, firstDelivered.size)).toFixed(2);
    const fmt = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`);
    const retried = [...failedAt]
      .flatMap(([key, at]) => (firstDelivered.has(key) ? [firstDelivered.get(key)! - at] : []))
      .sort((a, b) => a - b);
    const svix = svixAnchor.scenarios[`${sc.events}x${sc.endpoints}@${sc.failing}`];
    // stage by stage (one endpoint: a message has one first attempt), the messages delivered at their first attempt
    const wall = (t: number) => performance.timeOrigin + t;
    const breakdown =
      sc.warmUp || sc.endpoints > 1
        ? []
        : await burstBreakdown(pool, streamRedis, cfg.EVENTS_STREAM, {
            sentAt: new Map([...sentAt].map(([id, t]) => [id, wall(t)])),
            deliveredAt: new Map(
              [...firstDelivered].flatMap(([key, t]) => {
                const id = key.slice(key.indexOf(':') + 1);
                return key.startsWith('0:') && !failing.has(id) ? [[id, wall(t)] as const] : [];
              }),
            ),
          });
    if (!sc.warmUp)
      results.push(
        [
          title,
          `  delivered         ${firstDelivered.size} of ${expected}${verifyFailures ? `, ${verifyFailures} FAILED VERIFICATION` : ', every one verified with standardwebhooks'}; events sent in ${sendSeconds.toFixed(1)} s (${(sc.events / sendSeconds).toFixed(0)}/s)`,
          `  ours              ${(firstDelivered.size / seconds).toFixed(0)} deliveries/s, p50 ${fmt(pct(0.5))}, p99 ${fmt(pct(0.99))} (min ${fmt(latencies[0] ?? NaN)}, max ${fmt(latencies.at(-1) ?? NaN)}; ${retried.length} of ${latencies.length} retried), ${perDelivery(cpuTotal)} ms CPU per delivery`,
          ...(retried.length > 0
            ? [
                `  failed ones       ${retried.length} delivered on their retry ${fmt(retried[0]!)}–${fmt(retried.at(-1)!)} after the failed attempt (median ${fmt(retried[Math.floor(retried.length / 2)]!)})`,
              ]
            : []),
          ...breakdown,
          `  Svix (${svixAnchor.measured}) ${svix ?? '—'}${sc.rate ? " (Svix's rows are its 32-in-flight bursts: its API accepted 317–382 events/s)" : ''}`,
          `  CPU per delivery  ${Object.entries(cpu)
            .map(([k, v]) => `${k} ${perDelivery(v)}`)
            .join(', ')}; not counted: the bench's sender + receivers ${perDelivery((self.user + self.system) / 1e6)}`,
        ].join('\n'),
      );
  }
  if (OUTAGE_MS > 0)
    results.push(await outageScenario({ pool, repo, cfg, cpuNow, postEvent, inFlight: IN_FLIGHT, step }));
  await client.connection.close();
  streamRedis.disconnect();
  await pool.end();

  console.log(`
Webhook delivery (npm run bench:webhooks; ${REPLICAS} dispatcher(s) and ${REPLICAS} worker(s); first attempt from the dispatcher, retries in one Temporal workflow per failing endpoint (batches from its schedule in PostgreSQL); load average before: ${loadBefore})

${results.join('\n\n')}

Anchor without a Svix row above (ANCHORS.md): Temporal, one workflow per delivery: 42–43 deliveries/s, p50 23 s, p99 35–37 s, ≈ 43 ms CPU per delivery
`);
} finally {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1_000));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
