/**
 * `npm run bench:service-keys`: the cost of one service-key check on the target, in µs per check.
 *
 *   before  keyMatches(given, accepted): the configured plaintext list, every accepted key hashed
 *           again on every request (two keys during a rotation)
 *   after   AcceptedKeyTable.identify (what ServiceKeyVerifier does per request): one SHA-256 of the
 *           given key, a map look-up, timingSafeEqual, and the in-memory usage update
 *
 * No I/O in either (the verifier's reloads and usage flushes happen off the request path), so this
 * part runs without servers. BENCH_CHECKS (default 200000) sets the number of checks per case.
 *
 * Then, unless BENCH_ROTATION=0: calls per second held through a whole rotation. Throw-away
 * PostgreSQL and Temporal dev server, a target checking keys with ServiceKeyVerifier over real
 * HTTP, BENCH_CONSUMERS (16) consumer loops reading their key from the secret store (200 ms cache)
 * and calling back to back, and a rotation (shortened: quiet period 3 s) run by a worker in this
 * process. Prints calls/s before, during and after, and the failed calls (the goal: none).
 *
 * Then an idle pair (switch proof `holders`): one consumer process holding the key through a
 * reporting store (heartbeat 500 ms) and making no call at all; the same shortened rotation. Prints
 * its outcome and duration, and what the reports cost the target (requests, failed ones).
 *
 * Then how long the old key stays valid, for an annual and an exposure rotation of such a pair
 * (holders; measured from the rotation's start to the first 401 for the old key, with the shortened
 * durations), and what the default configuration makes of both.
 */
import { performance } from 'node:perf_hooks';
import { rmSync } from 'node:fs';
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createRotationActivities } from '../../activities/service-key-rotation.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { rotationSettings, startRotation } from '../../domain/service-keys/rotation.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { reportingStore } from '../../domain/service-keys/holders.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { workflowsPath } from '../../worker/index.js';
import { startKeyCheckedTarget } from '../support/service-keys.js';
import { timingSafeEqual } from 'node:crypto';
import { generateServiceKey, hashServiceKey } from '../../domain/service-keys/service-key-auth.js';
import { AcceptedKeyTable } from '../../domain/service-keys/verifier.js';

/** The baseline: the given key against a list of accepted plaintext keys, hashing each one per call (the check before the registry). */
function keyMatches(given: string, accepted: readonly string[]): boolean {
  const g = hashServiceKey(given);
  let ok = false;
  for (const k of accepted) ok = timingSafeEqual(g, hashServiceKey(k)) || ok;
  return ok;
}

const N = Number(process.env.BENCH_CHECKS ?? 200_000);
const noop = () => {};
const quiet = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

function time(label: string, check: () => unknown): number {
  for (let i = 0; i < Math.min(N, 20_000); i++) check(); // warm up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) check();
  const us = ((performance.now() - t0) * 1000) / N;
  console.log(`  ${label.padEnd(58)} ${us.toFixed(2).padStart(7)} µs/check`);
  return us;
}

function table(keys: string[]) {
  const t = new AcceptedKeyTable();
  t.replace(
    keys.map((k, i) => ({
      keyId: `sk_${i.toString(16).padStart(8, '0')}`,
      caller: `caller-${i}`,
      state: 'current' as const,
      hash: hashServiceKey(k),
    })),
  );
  return t;
}

const one = [generateServiceKey()];
const two = [generateServiceKey(), generateServiceKey()];
const many = Array.from({ length: 20 }, generateServiceKey);
const unknown = generateServiceKey();

console.log(`Service-key check on the target, ${N} checks per case (Node ${process.version}):\n`);
console.log('before: accepted keys from configuration (keyMatches)');
const b1 = time('1 accepted key, valid', () => keyMatches(one[0]!, one));
const b2 = time('2 accepted keys (a rotation), valid', () => keyMatches(two[1]!, two));
time('2 accepted keys, unknown key', () => keyMatches(unknown, two));
const b20 = time('20 accepted keys (many callers), valid', () => keyMatches(many[7]!, many));

console.log('\nafter: the registry, in memory (ServiceKeyVerifier / AcceptedKeyTable.identify)');
const t1 = table(one);
const t2 = table(two);
const t20 = table(many);
const a1 = time('1 accepted key, valid', () => t1.identify(one[0]!));
const a2 = time('2 accepted keys (pending + current), valid', () => t2.identify(two[1]!));
time('2 accepted keys, unknown key', () => t2.identify(unknown));
const a20 = time('20 accepted keys (many callers), valid', () => t20.identify(many[7]!));

console.log(
  `\nafter / before: 1 key ${(a1 / b1).toFixed(2)}×, 2 keys ${(a2 / b2).toFixed(2)}×, 20 keys ${(a20 / b20).toFixed(2)}×`,
);

if (process.env.BENCH_ROTATION !== '0') await rotationThroughput();

async function rotationThroughput() {
  const consumers = Number(process.env.BENCH_CONSUMERS ?? 16);
  console.log(`\nCalls per second through a whole rotation (${consumers} consumers, real HTTP, shortened rotation):`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = throwAwayDir('plana-bench-keys-');
  try {
    const [{ pg, temporal }, bundle] = await Promise.all([
      startThrowAwayServers(dir),
      bundleWorkflowCode({ workflowsPath, logger: quiet }),
    ]);
    const cfg = parseConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: temporal.address, LOG_LEVEL: 'silent' });
    const pool = createPool(pg.url, 8);
    await migrate(pool);
    const store = new PgSecretStore(pool, cfg.SECRETS_KEY, 0);
    const pair = { caller: 'bench-consumer', target: 'bench-target' };
    await ensureServiceKeys(pool, store, [pair as never]);
    const target = await startKeyCheckedTarget(pool, pair.target);
    await target.verifier.reload();

    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection });
    // holders report every 500 ms, the target flushes usage every 100 ms: a holder window of 1.1 s
    // (exposure: a holder tick of 200 ms plus the flush; polled every flush)
    const settings = {
      acceptWaitMs: 500,
      quietPeriodMs: 3000,
      pollIntervalMs: 250,
      deadlineMs: 60_000,
      rollbackWaitMs: 500,
      holderWindowMs: 1100,
      exposureNoticeMs: 300,
      exposurePollMs: 100,
    };
    const workerConnection = await NativeConnection.connect({ address: temporal.address });
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue: 'bench-rotation',
      workflowBundle: { code: bundle.code },
      activities: createRotationActivities({ pool, store, secrets: store, eventsUrl: 'http://127.0.0.1:9' }),
    });
    const workerRun = worker.run();

    // consumers: keep-alive HTTP, the key from the secret store (cached 200 ms), one call after another
    const agent = new http.Agent({ keepAlive: true, maxSockets: consumers });
    const url = new URL('/ping', target.url);
    const call = (key: string) =>
      new Promise<number>((resolve) => {
        const req = http.get(url, { agent, headers: { 'x-api-key': key } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
      });
    const consumerStore = new PgSecretStore(pool, cfg.SECRETS_KEY, 200);
    let phase: 'before' | 'during' | 'after' = 'before';
    const calls = { before: 0, during: 0, after: 0 };
    const failed = { before: 0, during: 0, after: 0 };
    let stop = false;
    const loops = Array.from({ length: consumers }, async () => {
      while (!stop) {
        const key = (await consumerStore.current(pair.caller, pair.target)).key;
        const status = await call(key);
        calls[phase]++;
        if (status !== 200) failed[phase]++;
      }
    });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const t0 = performance.now();
    await sleep(3000);
    const t1 = performance.now();
    phase = 'during';
    const started = await startRotation(
      { pool, temporal: client, taskQueue: 'bench-rotation', settings },
      pair,
      'manual',
    );
    const result = (await client.workflow.getHandle(started.workflowId).result()) as { outcome: string };
    const t2 = performance.now();
    phase = 'after';
    await sleep(3000);
    stop = true;
    await Promise.all(loops);
    const t3 = performance.now();

    const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en');
    console.log(
      `  before the rotation    ${rate(calls.before, t1 - t0).padStart(7)} calls/s   ${failed.before} failed`,
    );
    console.log(
      `  during (${((t2 - t1) / 1000).toFixed(1)} s, ${result.outcome})  ${rate(calls.during, t2 - t1).padStart(7)} calls/s   ${failed.during} failed of ${calls.during.toLocaleString('en')}`,
    );
    console.log(`  after                  ${rate(calls.after, t3 - t2).padStart(7)} calls/s   ${failed.after} failed`);
    if (failed.before + failed.during + failed.after > 0 || result.outcome !== 'completed') process.exitCode = 1;

    // an idle pair: its one consumer process holds the key and makes no call during the rotation
    const idle = { caller: 'bench-idle-consumer', target: pair.target };
    await ensureServiceKeys(pool, store, [idle as never]);
    await target.verifier.reload();
    const holding = reportingStore(new PgSecretStore(pool, cfg.SECRETS_KEY, 200), {
      targetUrl: (t) => (t === idle.target ? target.url : undefined),
      heartbeatMs: 500,
      tickMs: 200,
    });
    const first = await holding.current(idle.caller, idle.target);
    if ((await call(first.key)) !== 200) process.exitCode = 1; // its one call, before the rotation
    const answers = () => [...target.answered.entries()];
    const before = answers();
    const i0 = performance.now();
    const idleStarted = await startRotation(
      {
        pool,
        temporal: client,
        taskQueue: 'bench-rotation',
        settings,
        inventory: [{ ...idle, target: idle.target as never, live: true, what: 'bench', proof: 'holders' }],
      },
      idle,
      'manual',
    );
    const idleResult = (await client.workflow.getHandle(idleStarted.workflowId).result()) as { outcome: string };
    const i1 = performance.now();
    const count = (list: [number, number][], ok: boolean) =>
      list.filter(([st]) => (st === 200) === ok).reduce((n, [, c]) => n + c, 0);
    const reports = count(answers(), true) - count(before, true);
    const refused = count(answers(), false) - count(before, false);
    console.log(
      `\nAn idle pair (switch proof holders: one process holding the key, no call during the rotation, heartbeat 500 ms):`,
    );
    console.log(
      `  ${idleResult.outcome} in ${((i1 - i0) / 1000).toFixed(1)} s (quiet period 3 s); ${reports} reports reached the target, ${refused} failed`,
    );
    if (idleResult.outcome !== 'completed' || refused > 0) process.exitCode = 1;
    holding.close();

    // how long the old key stays valid: annual vs exposure, each on a fresh idle holders pair
    const oldKeyValidity = async (reason: 'annual' | 'exposure') => {
      const p = { caller: `bench-${reason}-consumer`, target: pair.target };
      await ensureServiceKeys(pool, store, [p as never]);
      await target.verifier.reload();
      const holder = reportingStore(new PgSecretStore(pool, cfg.SECRETS_KEY, 200), {
        targetUrl: (t) => (t === p.target ? target.url : undefined),
        heartbeatMs: 500,
        tickMs: 200,
      });
      const oldKey = await holder.current(p.caller, p.target);
      await call(oldKey.key);
      // the old key is not used meanwhile (that would hold an annual rotation): its revocation time is read from the registry
      const s0 = Date.now();
      const started = await startRotation(
        {
          pool,
          temporal: client,
          taskQueue: 'bench-rotation',
          settings,
          inventory: [{ ...p, target: p.target as never, live: true, what: 'bench', proof: 'holders' }],
        },
        p,
        reason,
      );
      let reportedAt: number | undefined;
      const watch = setInterval(() => {
        if (reportedAt === undefined && holder.holder.pairs[0]?.keyId !== oldKey.keyId) reportedAt = Date.now();
      }, 5);
      const outcome = ((await client.workflow.getHandle(started.workflowId).result()) as { outcome: string }).outcome;
      clearInterval(watch);
      holder.close();
      const revokedAt = (await listKeys(pool, p)).find((k) => k.keyId === oldKey.keyId)?.revokedAt?.getTime();
      const refusedAt = revokedAt !== undefined && (await call(oldKey.key)) === 401 ? revokedAt : undefined;
      if (outcome !== 'completed' || refusedAt === undefined) process.exitCode = 1;
      const secs = (ms: number | undefined) => (ms === undefined ? '?' : `${(ms / 1000).toFixed(1)} s`);
      console.log(
        `  ${reason.padEnd(8)} ${outcome}: old key valid ${secs(refusedAt && refusedAt - s0)} after the rotation started, ${secs(refusedAt && reportedAt && refusedAt - reportedAt)} after the holder reported the new key`,
      );
    };
    console.log(
      `\nHow long the old key stays valid (holders pair, idle; accept wait 0.5 s, quiet period 3 s, exposure notice 0.3 s):`,
    );
    await oldKeyValidity('annual');
    await oldKeyValidity('exposure');
    const d = rotationSettings(parseConfig({}));
    console.log(
      `  with the default configuration: annual at least ${Math.round((d.acceptWaitMs + Math.max(d.quietPeriodMs, d.holderWindowMs ?? 0)) / 1000)} s ` +
        `(accept wait + quiet period), exposure about ${Math.round((d.acceptWaitMs + d.exposureNoticeMs! + d.exposurePollMs!) / 1000)} s (accept wait + notice window + a poll)`,
    );

    worker.shutdown();
    await workerRun;
    await workerConnection.close();
    await connection.close();
    agent.destroy();
    await target.close();
    await pool.end();
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
