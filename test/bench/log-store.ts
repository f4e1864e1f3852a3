/**
 * `npm run bench:log-store`: the execution log's way into the log store, on throw-away PostgreSQL,
 * Redis, Temporal dev server and VictoriaLogs, with an account API and the mirror as the worker runs
 * it (LOG_STORE_MIRROR_INTERVAL_MS, default 1 s; the API's EXECUTION_LOG_FLUSH_MS, default 1 s).
 *
 *   lag      a steady trickle of Workspace API calls (BENCH_RATE per second, default 10) for
 *            BENCH_LAG (1m): for each call, the time from its answer to its line being readable in
 *            the store (polled every 200 ms): p50, p95, max.
 *   outage   the same trickle; the store stopped for BENCH_OUTAGE (10m; 0 skips it), then started
 *            again: the calls' latency before and during the outage, the time the mirror took to
 *            catch up, and the rows in PostgreSQL against the lines in the store (raw, and one per
 *            entry_id as the readers show them).
 */
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApi } from '../../api/server.js';
import { startExecutionLogMirror } from '../../domain/access/execution-log-mirror.js';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { queryLogs } from '../../lib/log-store.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { duration } from '../../lib/setting-kinds.js';
import {
  freePort,
  startPostgres,
  startRedis,
  startTemporal,
  startVictorialogs,
  stopAll,
  throwAwayDir,
} from '../../scripts/local-servers.js';
import { percentile } from './percentile.js';
import { adminOfNewWorkspace, createKey } from '../support/workspace-api.js';

const RATE = Number(process.env.BENCH_RATE ?? 10);
const LAG_MS = duration.parse(process.env.BENCH_LAG ?? '1m');
const OUTAGE_MS = duration.parse(process.env.BENCH_OUTAGE ?? '10m');
const step = (s: string) => console.log(`\x1b[36m▸\x1b[0m ${s}`);
const pct = (values: number[], q: number) =>
  percentile(
    [...values].sort((a, b) => a - b),
    q,
  );
const ms = (v: number) => (v < 1000 ? `${v.toFixed(0)} ms` : `${(v / 1000).toFixed(1)} s`);

const dir = throwAwayDir('plana-bench-log-store-');
try {
  step(`starting PostgreSQL, Redis, Temporal and VictoriaLogs in ${dir}`);
  const storeDir = path.join(dir, 'victorialogs');
  const storePort = await freePort();
  const [pg, redis, temporal, firstStore] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    freePort().then((port) => startRedis({ dir: path.join(dir, 'redis'), port })),
    freePort().then((port) => startTemporal({ dir: path.join(dir, 'temporal'), port })),
    startVictorialogs({ dir: storeDir, port: storePort }),
  ]);
  let store = firstStore;
  const apiPort = await freePort();
  const cfg = parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    LOG_STORE_URL: store.url,
    RATE_LIMIT_PER_SECOND: String(RATE * 4),
    RATE_LIMIT_WORKSPACE_PER_SECOND: String(RATE * 4),
  });
  const pool = createPool(cfg.DATABASE_URL, 4);
  await migrate(pool);
  const api = await startApi(cfg);
  const base = cfg.API_PUBLIC_URL;
  const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
  const key = await createKey(base, accessToken, { name: 'bench' });
  const mirror = startExecutionLogMirror({
    pool,
    storeUrl: store.url,
    intervalMs: cfg.LOG_STORE_MIRROR_INTERVAL_MS,
    log: createLogger({ name: 'bench-mirror', level: 'warn' }),
  });

  /** One Workspace API call: its status, latency and request id, and when it was answered. */
  const oneCall = async () => {
    const t0 = performance.now();
    const res = await fetch(`${base}/api/portal/apikeys/self`, { headers: { authorization: `Bearer ${key.token}` } });
    await res.arrayBuffer();
    const answeredAt = performance.now();
    return { status: res.status, latency: answeredAt - t0, requestId: res.headers.get('x-request-id')!, answeredAt };
  };
  /** RATE calls a second for `forMs`, each started on its own tick (a slow answer does not delay the next). */
  const trickle = async (forMs: number) => {
    const calls: Promise<Awaited<ReturnType<typeof oneCall>>>[] = [];
    const start = performance.now();
    for (let i = 0; performance.now() - start < forMs; i++) {
      calls.push(oneCall());
      await sleep(Math.max(0, start + ((i + 1) * 1000) / RATE - performance.now()));
    }
    return Promise.all(calls);
  };
  const stream = `{log="execution",workspace_id="${workspace.id}"}`;
  const storeCounts = async () => {
    const [row] = await queryLogs(
      store.url,
      `${stream} _time:1d | stats count() lines, count_uniq(entry_id) entries`,
      1,
    );
    return { lines: Number(row?.lines ?? 0), entries: Number(row?.entries ?? 0) };
  };
  const pgRows = async () =>
    Number(
      (await pool.query('SELECT count(*) AS n FROM execution_log WHERE workspace_id = $1', [workspace.id])).rows[0].n,
    );

  // the key's first check (bcrypt) and the connections' set-up, before anything is measured
  for (let i = 0; i < 20; i++) await oneCall();

  // lag: when each call's line is first readable in the store
  step(`lag: ${RATE} calls/s for ${ms(LAG_MS)}, the store polled every 200 ms`);
  const seen = new Map<string, number>();
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const lines = await queryLogs(store.url, `${stream} _time:10m | fields request_id`, 10_000).catch(() => []);
      const now = performance.now();
      for (const l of lines) if (!seen.has(l.request_id!)) seen.set(l.request_id!, now);
      await sleep(200);
    }
  })();
  const steady = await trickle(LAG_MS);
  const deadline = performance.now() + 30_000;
  while (steady.some((c) => !seen.has(c.requestId)) && performance.now() < deadline) await sleep(200);
  polling = false;
  await poller;
  const lags = steady.filter((c) => seen.has(c.requestId)).map((c) => seen.get(c.requestId)! - c.answeredAt);
  const before = steady.map((c) => c.latency);
  const afterLag = await storeCounts();
  const report = [
    `lag from a call's answer to its line in the store (${lags.length}/${steady.length} calls): p50 ${ms(pct(lags, 0.5))}, p95 ${ms(pct(lags, 0.95))}, max ${ms(Math.max(...lags))}`,
    `call latency, store up: p50 ${ms(pct(before, 0.5))}, p99 ${ms(pct(before, 0.99))}`,
    `the store after it: ${afterLag.lines} lines, ${afterLag.entries} distinct entries (PostgreSQL: ${await pgRows()} rows)`,
  ];
  console.log(report.join('\n'));

  if (OUTAGE_MS > 0) {
    step(`outage: the store stopped for ${ms(OUTAGE_MS)} during ${RATE} calls/s`);
    await store.stop();
    const during = await trickle(OUTAGE_MS);
    const failed = during.filter((c) => c.status !== 200).length;
    const latencies = during.map((c) => c.latency);
    step('the store started again; waiting for the mirror to catch up');
    store = await startVictorialogs({ dir: storeDir, port: storePort });
    const backAt = performance.now();
    await sleep(cfg.EXECUTION_LOG_FLUSH_MS + 500); // the API's last buffered calls written
    const rows = await pgRows();
    let counts = await storeCounts();
    while (counts.entries < rows && performance.now() - backAt < 15 * 60_000) {
      await sleep(500);
      counts = await storeCounts();
    }
    const caughtUp = performance.now() - backAt;
    await sleep(3_000); // anything sent twice would show by now
    counts = await storeCounts();
    report.push(
      `outage of ${ms(OUTAGE_MS)}: ${during.length} calls, ${failed} not answered 200; latency p50 ${ms(pct(latencies, 0.5))}, p99 ${ms(pct(latencies, 0.99))}`,
      `after the store's return: caught up in ${ms(caughtUp)}; PostgreSQL ${rows} rows, the store ${counts.lines} lines, ${counts.entries} distinct entries`,
    );
  }
  await mirror.stop();
  await api.close();
  await pool.end();
  console.log(`\n${report.join('\n')}`);
} finally {
  await stopAll();
}
