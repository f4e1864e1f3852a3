/**
 * Service-key rotation on the run's real Temporal, PostgreSQL and Redis, over HTTP: the
 * ops API starts `rotate:<caller>:<target>:<n>`, a worker on this file's task queue runs it, and a
 * tiny target checks keys with the shared ServiceKeyVerifier (usage flushed every 100 ms). Each test
 * uses pairs of its own. Durations are shortened through the API's configuration (the workflow gets
 * them as input): quiet period 1.5 s, deadline 5 s, poll 250 ms; holders report every 300 ms.
 *
 * With RECORD_HISTORIES=1 the successful rotations' histories (`calls` and `holders` proofs) are
 * written to test/fixtures/histories.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import type { ServiceKeyPair } from '../../domain/service-keys/inventory.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import { rotationRecord, rotationSettings, startRotation } from '../../domain/service-keys/rotation.js';
import { reportingStore, type ReportingStore } from '../../domain/service-keys/holders.js';
import type { SwitchProof } from '../../domain/service-keys/inventory.js';
import { misuseRecord, startMisuseAlerter, SERVICE_KEY_REVOKED_KEY_USED } from '../../domain/service-keys/misuse.js';
import { ensureRotationSchedule, nextRotation } from '../../domain/service-keys/schedules.js';
import { SERVICE_KEY_INVENTORY } from '../../domain/service-keys/inventory.js';
import { startNotifications } from '../../services/notifications/server.js';
import { readMailbox, startSmtpSink, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { ensureWorkerSchedules } from '../../worker/index.js';
import { Redis } from 'ioredis';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import type { ServiceKeyVerifier } from '../../domain/service-keys/verifier.js';
import { startEvents } from '../../services/events/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { rotationScheduleId, type RotationResult } from '../../domain/service-keys/workflow-contract.js';
import { rotationStatusQuery } from '../../workflows/rotate-service-key.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { tempDir } from '../support/env.js';
import { keyConsumer, startKeyCheckedTarget, testKeys } from '../support/service-keys.js';
import {
  connectTemporalClient,
  rotationActivityDeps,
  shortRotationTimings,
  startRotationWorker,
  type RotationWorker,
  type TemporalClient,
} from '../support/rotation-worker.js';

const TARGET = `rt-${randomBytes(3).toString('hex')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let api: TestApi;
let events: Awaited<ReturnType<typeof startEvents>>;
let verifier: ServiceKeyVerifier;
let target: Awaited<ReturnType<typeof startKeyCheckedTarget>>;
let store: PgSecretStore;
let rotationWorker: RotationWorker;
let temporal: TemporalClient;
let client: Client;
let sink: SmtpSink;
let notifications: Awaited<ReturnType<typeof startNotifications>>;
let redis: Redis;
let alerter: { stop(): Promise<void> };
/** Every key this file saw, to search histories and bodies for. */
const secrets = new Set<string>();

beforeAll(async () => {
  api = await startTestApi({
    // an unexpected 500 of the API is printed with its stack (the API logs it at level error)
    LOG_LEVEL: 'error',
    EVENTS_PORT: String(await freePort()),
    SERVICE_KEY_ROTATION_EVERY_DAYS: '30',
    ...shortRotationTimings({ quietMs: 1500, deadlineMs: 5000 }),
    // holding processes report every 300 ms; targets write usage every 100 ms: a holder window of 0.7 s
    SERVICE_KEY_HOLDER_HEARTBEAT_MS: '300',
    SERVICE_KEY_USAGE_FLUSH_MS: '100',
    // processes read their key through a 200 ms cache: an exposure rotation's notice window is a
    // holder tick (at least 1 s) plus a flush, 1.1 s
    SERVICE_KEY_SECRET_TTL_MS: '200',
  });
  const cfg = { ...api.cfg, EVENTS_URL: `http://127.0.0.1:${api.cfg.EVENTS_PORT}` };
  events = await startEvents(cfg);
  store = new PgSecretStore(api.pool, cfg.SECRETS_KEY, 0);

  // the target: any service checking X-API-Key with the shared verifier
  target = await startKeyCheckedTarget(api.pool, TARGET);
  verifier = target.verifier;

  temporal = await connectTemporalClient();
  client = temporal.client;
  rotationWorker = await startRotationWorker(
    cfg.TEMPORAL_TASK_QUEUE,
    rotationActivityDeps(cfg, api.pool, store, {
      starter: { temporal: client, taskQueue: cfg.TEMPORAL_TASK_QUEUE, settings: rotationSettings(cfg) },
    }),
  );

  // the revoked-key alerter, as the worker process runs it: mails through notifications to the SMTP sink
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  notifications = await startNotifications(cfg);
  redis = new Redis(cfg.REDIS_URL);
  alerter = startMisuseAlerter({
    pool: api.pool,
    secrets: new PgSecretStore(api.pool, cfg.SECRETS_KEY),
    caller: 'worker',
    notificationsUrl: cfg.NOTIFICATIONS_URL,
    eventsUrl: cfg.EVENTS_URL,
    to: 'ops-team@plana.test',
    intervalMs: 3600_000,
    pollMs: 100,
    log: { warn() {}, error() {}, info() {} },
  });
}, 60_000);

afterAll(async () => {
  await alerter?.stop();
  await notifications?.close();
  await sink?.close();
  redis?.disconnect();
  await rotationWorker?.stop();
  await temporal?.close();
  await target?.close();
  await events?.close();
  await api?.close();
});

/** A pair of this test's own, with a bootstrapped current key. */
async function newPair() {
  const pair = { caller: `c-${randomBytes(3).toString('hex')}`, target: TARGET };
  // a target of this file's own (not in the inventory)
  await ensureServiceKeys(api.pool, store, [pair as unknown as Pick<ServiceKeyPair, 'caller' | 'target'>]);
  secrets.add((await store.current(pair.caller, pair.target)).key);
  // the target knows the new pair before its consumer calls (NOTIFY would be a few ms later)
  await verifier.reload();
  return pair;
}

function rotate(pair: { caller: string; target: string }, body: object = {}) {
  return fetch(`${api.base}/api/ops/service-keys/${pair.caller}/${pair.target}/rotate`, {
    method: 'POST',
    headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const ping = (key: string) => target.ping(key);

/** Calls the target back to back until stopped; `key()` is what the consumer sends each time. */
const consumer = (key: () => Promise<string>) => keyConsumer(ping, key, secrets);

/** A history as text with every payload decoded (payload data is base64 in the JSON form). */
function historyText(history: unknown): string {
  const json = JSON.stringify(history);
  const decoded: string[] = [];
  JSON.parse(json, (k, v) => {
    if (k === 'data' && typeof v === 'string') decoded.push(Buffer.from(v, 'base64').toString('utf8'));
    return v;
  });
  return `${json}\n${decoded.join('\n')}`;
}

/** The summaries of a history's timers (the workflow's sleeps, as the Temporal UI shows them). */
function timerSummaries(history: {
  events?:
    | {
        timerStartedEventAttributes?: unknown;
        userMetadata?: { summary?: { data?: Uint8Array | null } | null } | null;
      }[]
    | null;
}): string[] {
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes && e.userMetadata?.summary?.data)
    .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')) as string);
}

async function expectNoKeyIn(text: string) {
  for (const k of secrets) expect(text).not.toContain(k);
}

describe('service-key rotation', () => {
  it('a consumer calling its target throughout: zero failed calls; then the old key gets 401 and the new one works; no key in the history or the answer', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    // the consumer reads the secret store per call, cached 200 ms
    const consumerStore = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 200);
    const traffic = consumer(async () => (await consumerStore.current(pair.caller, pair.target)).key);
    await sleep(300);

    const res = await rotate(pair, { reason: 'exposure' });
    const text = await res.text();
    expect(res.status).toBe(202);
    const started = JSON.parse(text) as { workflowId: string; temporalUiUrl: string; n: number };
    expect(started.workflowId).toBe(`rotate:${pair.caller}:${pair.target}:1`);
    expect(started.temporalUiUrl).toContain(encodeURIComponent(started.workflowId));

    const handle = client.workflow.getHandle(started.workflowId);
    const result = (await handle.result()) as RotationResult;
    const counts = await traffic.stop();
    expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
    expect(counts.failed).toBe(0);
    expect(counts.calls).toBeGreaterThan(50);

    const now = await store.current(pair.caller, pair.target);
    secrets.add(now.key);
    expect(now.keyId).toBe(result.newKeyId);
    await verifier.reload();
    expect((await ping(old.key)).status).toBe(401);
    expect((await ping(now.key)).status).toBe(200);
    const states = Object.fromEntries((await listKeys(api.pool, pair)).map((k) => [k.keyId, k.state]));
    expect(states).toEqual({ [old.keyId]: 'revoked', [now.keyId]: 'current' });
    expect(await rotationRecord(api.pool, started.workflowId)).toMatchObject({
      outcome: 'completed',
      reason: 'exposure',
    });

    const history = await handle.fetchHistory();
    const hist = historyText(history);
    expect(hist).toContain(result.newKeyId);
    expect(hist).toContain(old.keyId);
    await expectNoKeyIn(hist);
    await expectNoKeyIn(text);
    const list = await fetch(`${api.base}/api/ops/service-keys`, { headers: { 'x-api-key': testKeys.operator } });
    await expectNoKeyIn(await list.text());
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(
        path.resolve(import.meta.dirname, '../fixtures/histories/rotate-service-key.json'),
        JSON.stringify(history, null, 2) + '\n',
      );
    }
    console.log(`rotation: ${counts.calls} calls, 0 failed`);
  }, 30_000);

  it('a consumer that never reloads: rolled back at the deadline, no call fails, the alert is recorded', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const traffic = consumer(async () => old.key);

    const res = await rotate(pair);
    expect(res.status).toBe(202);
    const { workflowId } = (await res.json()) as { workflowId: string };
    const handle = client.workflow.getHandle(workflowId);
    const result = (await handle.result()) as RotationResult;
    const counts = await traffic.stop();

    expect(result).toMatchObject({ outcome: 'rolled-back', oldKeyId: old.keyId });
    expect(result.message).toContain('never used');
    expect(counts.failed).toBe(0);
    expect((await store.current(pair.caller, pair.target)).keyId).toBe(old.keyId);
    const states = Object.fromEntries((await listKeys(api.pool, pair)).map((k) => [k.keyId, k.state]));
    expect(states).toEqual({ [old.keyId]: 'current', [result.newKeyId]: 'revoked' });
    const record = await rotationRecord(api.pool, workflowId);
    expect(record).toMatchObject({ outcome: 'rolled-back', alert: `event service-key.rotation-failed:${workflowId}` });
    await expectNoKeyIn(historyText(await handle.fetchHistory()));
  }, 30_000);

  it('a restart during a rotation (the bootstrap runs again after the switch): no key is made or revoked, the list shows the key the consumer sends with its uses, and the rotation completes on that key', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const consumerStore = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 200);
    let sent = old.keyId;
    const traffic = consumer(async () => {
      const s = await consumerStore.current(pair.caller, pair.target);
      sent = s.keyId;
      return s.key;
    });
    try {
      const res = await rotate(pair);
      expect(res.status).toBe(202);
      const handle = client.workflow.getHandle(((await res.json()) as { workflowId: string }).workflowId);
      // step 3: the secret store's current version is the new (still pending) key
      await expect
        .poll(async () => (await store.current(pair.caller, pair.target)).keyId, { timeout: 5_000, interval: 20 })
        .not.toBe(old.keyId);

      // `npm run dev` / `npm run db:migrate` started again now
      expect(
        await ensureServiceKeys(api.pool, store, [pair as unknown as Pick<ServiceKeyPair, 'caller' | 'target'>]),
      ).toEqual([]);
      const during = await listKeys(api.pool, pair);
      expect(during.map((k) => k.state).sort()).toEqual(['current', 'pending']);

      const result = (await handle.result()) as RotationResult;
      expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
      expect(traffic.counts.failed).toBe(0);
      // what `npm run cli -- service-keys` shows for the pair: the key the consumer sends, current and used
      const { pairs } = (await (
        await fetch(`${api.base}/api/ops/service-keys`, { headers: { 'x-api-key': testKeys.operator } })
      ).json()) as {
        pairs: {
          caller: string;
          target: string;
          keys: { keyId: string; state: string; lastUsedAt: string | null; useCount: number }[];
        }[];
      };
      const shown = pairs.find((p) => p.caller === pair.caller && p.target === pair.target)!.keys;
      expect(shown.filter((k) => k.state !== 'revoked')).toEqual([
        expect.objectContaining({ keyId: result.newKeyId, state: 'current', lastUsedAt: expect.any(String) }),
      ]);
      expect(sent).toBe(result.newKeyId);
      expect(shown.find((k) => k.keyId === result.newKeyId)!.useCount).toBeGreaterThan(0);
    } finally {
      await traffic.stop();
    }
  }, 30_000);

  it('a second rotation of the same pair is refused (409) while one runs; another pair rotates meanwhile; the pair can rotate again afterwards', async () => {
    const [a, b] = [await newPair(), await newPair()];
    const [first, second] = await Promise.all([rotate(a), rotate(a)]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([202, 409]);
    const refused = [first, second].find((r) => r.status === 409)!;
    expect(((await refused.json()) as { detail: string }).detail).toContain('being rotated already');

    const other = await rotate(b);
    expect(other.status).toBe(202);
    const again = await rotate(a);
    expect(again.status).toBe(409);

    const ok = [first, second].find((r) => r.status === 202)!;
    const ids = [
      ((await ok.json()) as { workflowId: string }).workflowId,
      ((await other.json()) as { workflowId: string }).workflowId,
    ];
    expect(ids).toEqual([`rotate:${a.caller}:${a.target}:1`, `rotate:${b.caller}:${b.target}:1`]);
    // nobody calls with these pairs: both roll back at the deadline
    const results = (await Promise.all(ids.map((id) => client.workflow.getHandle(id).result()))) as RotationResult[];
    expect(results.map((r) => r.outcome)).toEqual(['rolled-back', 'rolled-back']);

    const next = await rotate(a);
    expect(next.status).toBe(202);
    const { workflowId } = (await next.json()) as { workflowId: string };
    expect(workflowId).toBe(`rotate:${a.caller}:${a.target}:2`);
    await client.workflow.getHandle(workflowId).terminate('test done');
  }, 40_000);

  it('an unknown pair: 404', async () => {
    const res = await rotate({ caller: 'nobody', target: TARGET });
    expect(res.status).toBe(404);
  });
});

interface ListedPair {
  caller: string;
  target: string;
  keys: { keyId: string; state: string }[];
  rotation: { running: string | null; last: { workflowId: string; outcome: string } | null; next: string | null };
}
async function listed(pair: { caller: string; target: string }): Promise<ListedPair> {
  const res = await fetch(`${api.base}/api/ops/service-keys`, { headers: { 'x-api-key': testKeys.operator } });
  if (res.status !== 200) expect.fail(`GET /api/ops/service-keys answered ${res.status}: ${await res.text()}`);
  const { pairs } = (await res.json()) as { pairs: ListedPair[] };
  return pairs.find((p) => p.caller === pair.caller && p.target === pair.target)!;
}

describe('scheduled rotation, the list, and revoked keys', () => {
  it("every live pair gets its rotation schedule at start-up; a pair's schedule rotates it like the ops API does; the list shows the next and the last rotation", async () => {
    // what the worker and `npm run dev` do at start
    await ensureWorkerSchedules(client, api.cfg);
    for (const p of SERVICE_KEY_INVENTORY.filter((x) => x.live)) {
      const d = await client.schedule.getHandle(rotationScheduleId(p.caller, p.target)).describe();
      expect(d.spec.intervals?.[0]?.every).toBe(30 * 24 * 3600_000);
      expect(d.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'annualServiceKeyRotation',
        args: [{ caller: p.caller, target: p.target }],
      });
    }

    const pair = await newPair();
    const scheduleId = rotationScheduleId(pair.caller, pair.target);
    expect(await ensureRotationSchedule(client, pair, { taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, everyDays: 365 })).toBe(
      'created',
    );
    expect(await ensureRotationSchedule(client, pair, { taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, everyDays: 365 })).toBe(
      'exists',
    );
    // the period changed in the configuration: the schedule follows
    expect(await ensureRotationSchedule(client, pair, { taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, everyDays: 90 })).toBe(
      'updated',
    );
    try {
      const before = await listed(pair);
      expect(before.rotation.running).toBeNull();
      const next = Date.parse(before.rotation.next!);
      expect(next).toBeGreaterThan(Date.now());
      expect(next).toBeLessThanOrEqual(Date.now() + 90 * 24 * 3600_000);

      const old = await store.current(pair.caller, pair.target);
      const consumerStore = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 200);
      const traffic = consumer(async () => (await consumerStore.current(pair.caller, pair.target)).key);
      await client.schedule.getHandle(scheduleId).trigger();
      const workflowId = `rotate:${pair.caller}:${pair.target}:1`;
      // the schedule's action starts the pair's next numbered rotation
      const schedule = client.schedule.getHandle(scheduleId);
      await expect.poll(async () => (await schedule.describe()).info.recentActions.length, { timeout: 10_000 }).toBe(1);
      const action = (await schedule.describe()).info.recentActions[0]!.action.workflow;
      expect(await client.workflow.getHandle(action.workflowId, action.firstExecutionRunId).result()).toEqual({
        workflowId,
      });

      const result = (await client.workflow.getHandle(workflowId).result()) as RotationResult;
      const counts = await traffic.stop();
      expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
      expect(counts.failed).toBe(0);
      expect(await rotationRecord(api.pool, workflowId)).toMatchObject({ reason: 'annual', outcome: 'completed' });
      const after = await listed(pair);
      expect(after.rotation.running).toBeNull();
      expect(after.rotation.last).toMatchObject({ workflowId, outcome: 'completed' });
      expect(after.keys.find((k) => k.state === 'current')?.keyId).toBe(result.newKeyId);
    } finally {
      await client.schedule.getHandle(scheduleId).delete();
    }
  }, 40_000);

  it('a schedule deleted while the list describes it counts as absent: the list never fails for it (Temporal answers FAILED_PRECONDITION, not NOT_FOUND, in that moment)', async () => {
    // the race is narrow (about 1 describe in 100 of a schedule being deleted): many describes
    // around many deletes make it near certain
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 10; round++) {
      const pairs = Array.from({ length: 10 }, () => ({
        caller: `sd-${randomBytes(3).toString('hex')}`,
        target: TARGET,
      }));
      for (const pair of pairs)
        await ensureRotationSchedule(client, pair, { taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, everyDays: 365 });
      const described = pairs.flatMap((pair) =>
        [0, 3, 6, 9, 12].map((ms) =>
          sleep(ms)
            .then(() => nextRotation(client, pair))
            .then(
              (next) => (next ? 'next' : 'absent'),
              (err: Error) => `failed: ${err.message} (${String((err.cause as Error | undefined)?.message)})`,
            ),
        ),
      );
      await Promise.all(
        pairs.map((pair) => client.schedule.getHandle(rotationScheduleId(pair.caller, pair.target)).delete()),
      );
      for (const outcome of await Promise.all(described)) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    expect([...outcomes.keys()].filter((o) => o.startsWith('failed'))).toEqual([]);
    expect(outcomes.get('absent')).toBeGreaterThan(0);
  }, 60_000);

  it('the list shows a running rotation; the schedule skips a pair that is rotating already (no second rotation, no failure)', async () => {
    const pair = await newPair();
    const res = await rotate(pair);
    expect(res.status).toBe(202);
    const { workflowId } = (await res.json()) as { workflowId: string };
    // nobody uses this pair: the rotation waits for its consumer until the deadline (5 s)
    expect((await listed(pair)).rotation.running).toBe(workflowId);
    await ensureRotationSchedule(client, pair, { taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, everyDays: 365 });
    const schedule = client.schedule.getHandle(rotationScheduleId(pair.caller, pair.target));
    try {
      await schedule.trigger();
      await expect.poll(async () => (await schedule.describe()).info.recentActions.length, { timeout: 10_000 }).toBe(1);
      const action = (await schedule.describe()).info.recentActions[0]!.action;
      const run = await client.workflow
        .getHandle(action.workflow.workflowId, action.workflow.firstExecutionRunId)
        .result();
      expect(run).toMatchObject({ skipped: expect.stringContaining('being rotated already') });
      const { rows } = await api.pool.query(
        `SELECT count(*)::int AS n FROM service_key_rotations WHERE caller = $1 AND target = $2`,
        [pair.caller, pair.target],
      );
      expect(rows[0].n).toBe(1);
    } finally {
      await schedule.delete();
      await client.workflow.getHandle(workflowId).terminate('test done');
    }
  }, 30_000);

  it('a revoked key used after the rotation: 401 every time, one alert mail to the operators and one event, never the key', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const consumerStore = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 200);
    const traffic = consumer(async () => (await consumerStore.current(pair.caller, pair.target)).key);
    const res = await rotate(pair);
    const { workflowId } = (await res.json()) as { workflowId: string };
    expect((await client.workflow.getHandle(workflowId).result()) as RotationResult).toMatchObject({
      outcome: 'completed',
    });
    await traffic.stop();
    await verifier.reload();

    // a consumer that missed the rotation keeps calling with the old key
    for (let i = 0; i < 5; i++) expect((await ping(old.key)).status).toBe(401);
    const alerts = () => readMailbox(sink.dir).filter((m) => m.subject.includes(old.keyId));
    // the alerter records the alert once both the mail and the event have gone out
    await expect.poll(async () => (await misuseRecord(api.pool, old.keyId))?.alerts, { timeout: 10_000 }).toBe(1);
    expect(alerts()).toHaveLength(1);
    const mail = alerts()[0]!;
    expect(mail.to).toEqual(['ops-team@plana.test']);
    expect(mail.subject).toContain(`${pair.caller} → ${pair.target}`);
    expect(mail.text).toContain(`rotate-key ${pair.caller} ${pair.target} --reason exposure`);

    const events = (await redis.xrange(api.cfg.EVENTS_STREAM, '-', '+'))
      .map(
        ([, fields]) =>
          JSON.parse(fields[fields.indexOf('event') + 1]!) as {
            type: string;
            subject: string;
            data: { keyId: string };
          },
      )
      .filter((e) => e.type === SERVICE_KEY_REVOKED_KEY_USED && e.data.keyId === old.keyId);
    expect(events).toHaveLength(1);
    expect(events[0]!.subject).toBe(`${pair.caller}:${pair.target}`);

    // more uses within the alert interval: still refused, no second alert
    for (let i = 0; i < 5; i++) expect((await ping(old.key)).status).toBe(401);
    await sleep(500);
    expect(alerts()).toHaveLength(1);
    expect(await misuseRecord(api.pool, old.keyId)).toMatchObject({
      alerts: 1,
      caller: pair.caller,
      target: pair.target,
    });
    // a key that was never registered is a plain 401, no alert
    expect((await ping(randomBytes(32).toString('hex'))).status).toBe(401);
    await expectNoKeyIn(JSON.stringify(events) + mail.text + mail.subject);
  }, 30_000);
});

describe('idle consumers: the switch proofs of the inventory', () => {
  /** Starts a rotation of a pair declared with `proof` (as the ops API does for the inventory's pairs). */
  async function rotateDeclared(pair: { caller: string; target: string }, proof: SwitchProof) {
    const inventory = [{ ...pair, target: pair.target as never, live: true, what: 'a test pair', proof }];
    const started = await startRotation(
      {
        pool: api.pool,
        temporal: client,
        taskQueue: api.cfg.TEMPORAL_TASK_QUEUE,
        settings: rotationSettings(api.cfg),
        inventory,
      },
      pair,
      'annual',
    );
    const handle = client.workflow.getHandle(started.workflowId);
    return { handle, result: (await handle.result()) as RotationResult };
  }

  /** A long-lived consumer process: its calls read the key through a reporting store (holders.ts), as the platform's processes do. */
  function consumerProcess(pair: { caller: string; target: string }, ttlMs: number) {
    const store: ReportingStore = reportingStore(new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, ttlMs), {
      targetUrl: (t) => (t === TARGET ? target.url : undefined),
      heartbeatMs: 300,
      tickMs: 100,
    });
    processes.push(store);
    return {
      store,
      /** One business call, as the process makes it. */
      async call() {
        const k = await store.current(pair.caller, pair.target);
        secrets.add(k.key);
        return (await ping(k.key)).status;
      },
    };
  }
  const processes: ReportingStore[] = [];
  afterAll(() => {
    for (const p of processes) p.close();
  });
  const failedAnswers = () => [...target.answered].filter(([status]) => status !== 200).reduce((n, [, c]) => n + c, 0);

  it('holders: a process that makes no call during the rotation reports the new key itself; the rotation completes, the old key then gets 401, the new one works, no call failed', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const proc = consumerProcess(pair, 200);
    expect(await proc.call()).toBe(200); // it holds the key from now on
    await sleep(500);
    const failedBefore = failedAnswers();
    const usesBefore = (await listKeys(api.pool, pair)).find((k) => k.keyId === old.keyId)!.useCount;

    const { handle, result } = await rotateDeclared(pair, 'holders');
    expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
    // no business call was made, no request failed
    expect(failedAnswers()).toBe(failedBefore);
    expect(proc.store.holder.pairs).toEqual([{ ...pair, keyId: result.newKeyId }]);
    const keys = Object.fromEntries((await listKeys(api.pool, pair)).map((k) => [k.keyId, k]));
    expect(keys[old.keyId]).toMatchObject({ state: 'revoked' });
    expect(keys[old.keyId]!.useCount).toBeGreaterThan(usesBefore); // its idle heartbeats, before the switch
    expect(keys[result.newKeyId]).toMatchObject({ state: 'current', lastUsedAt: expect.any(Date) }); // its report of the new key

    await verifier.reload();
    expect((await ping(old.key)).status).toBe(401);
    expect(await proc.call()).toBe(200); // its next call sends the new key
    const now = await store.current(pair.caller, pair.target);
    expect(now.keyId).toBe(result.newKeyId);
    expect((await ping(now.key)).status).toBe(200);
    expect(await handle.query(rotationStatusQuery)).toMatchObject({
      proof: 'holders',
      lastCheck: { newKeyUsed: true, newKeyNeeded: true },
    });

    const history = await handle.fetchHistory();
    await expectNoKeyIn(historyText(history));
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(
        path.resolve(import.meta.dirname, '../fixtures/histories/rotate-service-key-holders.json'),
        JSON.stringify(history, null, 2) + '\n',
      );
    }
  }, 30_000);

  it('holders: a process that really keeps the old key (a cache that never reloads) keeps reporting it: rolled back at the deadline, nothing fails, the alert is recorded', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const stuck = consumerProcess(pair, 3600_000);
    expect(await stuck.call()).toBe(200);
    // longer than the holder window: from here only its reports keep the old key in use
    await sleep(1_000);
    const failedBefore = failedAnswers();

    const { handle, result } = await rotateDeclared(pair, 'holders');
    expect(result).toMatchObject({ outcome: 'rolled-back', oldKeyId: old.keyId });
    expect(result.message).toContain('never used');
    expect(failedAnswers()).toBe(failedBefore);
    expect(stuck.store.holder.pairs).toEqual([{ ...pair, keyId: old.keyId }]);
    expect(await stuck.call()).toBe(200); // the old key is still the current one
    const states = Object.fromEntries((await listKeys(api.pool, pair)).map((k) => [k.keyId, k.state]));
    expect(states).toEqual({ [old.keyId]: 'current', [result.newKeyId]: 'revoked' });
    expect(await rotationRecord(api.pool, handle.workflowId)).toMatchObject({
      outcome: 'rolled-back',
      alert: `event service-key.rotation-failed:${handle.workflowId}`,
    });
  }, 30_000);

  it('holders: a pair no running process holds (none has read its key) rotates once the old key has been silent; a process starting afterwards reads the new key', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    const { result } = await rotateDeclared(pair, 'holders');
    expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
    await verifier.reload();
    expect((await ping(old.key)).status).toBe(401);
    expect(await consumerProcess(pair, 200).call()).toBe(200);
  }, 30_000);

  it('per-run: a command that reads the store on every run (the operator CLI) and did not run during the rotation: completes after the quiet period; the next run sends the new key', async () => {
    const pair = await newPair();
    const old = await store.current(pair.caller, pair.target);
    // a run before the rotation
    expect(
      (await ping((await new PgSecretStore(api.pool, api.cfg.SECRETS_KEY).current(pair.caller, pair.target)).key))
        .status,
    ).toBe(200);
    const { handle, result } = await rotateDeclared(pair, 'per-run');
    expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
    expect(await handle.query(rotationStatusQuery)).toMatchObject({
      proof: 'per-run',
      lastCheck: { newKeyUsed: false, newKeyNeeded: false },
    });
    await verifier.reload();
    expect((await ping(old.key)).status).toBe(401);
    // the next run
    const next = await new PgSecretStore(api.pool, api.cfg.SECRETS_KEY).current(pair.caller, pair.target);
    secrets.add(next.key);
    expect(next.keyId).toBe(result.newKeyId);
    expect((await ping(next.key)).status).toBe(200);
  }, 30_000);

  describe('after a suspected exposure (reason exposure)', () => {
    // an annual quiet period far longer than the whole test: only the exposure rule can finish in time
    const exposureSettings = () => ({ ...rotationSettings(api.cfg), quietPeriodMs: 20_000, deadlineMs: 15_000 });
    async function rotateExposed(pair: { caller: string; target: string }, proof: SwitchProof) {
      const inventory = [{ ...pair, target: pair.target as never, live: true, what: 'a test pair', proof }];
      const started = await startRotation(
        {
          pool: api.pool,
          temporal: client,
          taskQueue: api.cfg.TEMPORAL_TASK_QUEUE,
          settings: exposureSettings(),
          inventory,
        },
        pair,
        'exposure',
      );
      return client.workflow.getHandle(started.workflowId);
    }

    it('holders: the old key is refused right after the holding process reports the new one, without the annual quiet period, although someone keeps using the old key', async () => {
      const pair = await newPair();
      const old = await store.current(pair.caller, pair.target);
      const proc = consumerProcess(pair, 200);
      expect(await proc.call()).toBe(200); // it holds the key from now on
      await sleep(500);

      // whoever got hold of the exposed key calls with it throughout
      let stop = false;
      let refusedAt: number | undefined;
      const intruder = (async () => {
        while (!stop && refusedAt === undefined) {
          if ((await ping(old.key)).status === 401) refusedAt = Date.now();
          await sleep(20);
        }
      })();
      // when the holding process has reported the new key to the target
      let reportedAt: number | undefined;
      const watch = setInterval(() => {
        if (reportedAt === undefined && proc.store.holder.pairs[0]?.keyId !== old.keyId) reportedAt = Date.now();
      }, 10);
      try {
        const startedAt = Date.now();
        const handle = await rotateExposed(pair, 'holders');
        const result = (await handle.result()) as RotationResult;
        expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
        await expect.poll(() => refusedAt, { timeout: 2_000, interval: 20 }).toBeDefined();
        // the order: the holder reports, then the old key is refused, within a notice window
        // (cache tick + usage flush, 1.1 s here) and a poll, not after the 20 s quiet period
        expect(reportedAt).toBeDefined();
        expect(refusedAt!).toBeGreaterThan(reportedAt!);
        expect(refusedAt! - reportedAt!).toBeLessThan(3_000);
        expect(refusedAt! - startedAt).toBeLessThan(exposureSettings().quietPeriodMs / 2);
        expect(await handle.query(rotationStatusQuery)).toMatchObject({
          proof: 'holders',
          exposure: true,
          lastCheck: { newKeyUsed: true, newKeyNeeded: true },
        });
        const states = Object.fromEntries((await listKeys(api.pool, pair)).map((k) => [k.keyId, k.state]));
        expect(states).toEqual({ [old.keyId]: 'revoked', [result.newKeyId]: 'current' });
        // the consumer works on with the new key
        expect(await proc.call()).toBe(200);
        const history = await handle.fetchHistory();
        await expectNoKeyIn(historyText(history));
        if (process.env.RECORD_HISTORIES) {
          writeFileSync(
            path.resolve(import.meta.dirname, '../fixtures/histories/rotate-service-key-exposure.json'),
            JSON.stringify(history, null, 2) + '\n',
          );
        }
      } finally {
        stop = true;
        clearInterval(watch);
        await intruder;
      }
    }, 30_000);

    it('holders: a process that keeps the old key never reports the new one: rolled back at the deadline, the old key still works', async () => {
      const pair = await newPair();
      const old = await store.current(pair.caller, pair.target);
      const stuck = consumerProcess(pair, 3600_000);
      expect(await stuck.call()).toBe(200);
      const result = (await (await rotateExposed(pair, 'holders')).result()) as RotationResult;
      expect(result).toMatchObject({ outcome: 'rolled-back', oldKeyId: old.keyId });
      expect(result.message).toContain('never used');
      expect(await stuck.call()).toBe(200);
    }, 30_000);

    it('per-run: the old key dies a notice window after the switch, not after the quiet period; the next run sends the new key', async () => {
      const pair = await newPair();
      const old = await store.current(pair.caller, pair.target);
      const startedAt = Date.now();
      const handle = await rotateExposed(pair, 'per-run');
      const result = (await handle.result()) as RotationResult;
      expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
      expect(Date.now() - startedAt).toBeLessThan(exposureSettings().quietPeriodMs / 2);
      // what the Temporal UI shows for its waits: the notice window, not the annual silence
      const waits = timerSummaries(await handle.fetchHistory()).filter((w) => w.includes(old.keyId));
      expect(waits.length).toBeGreaterThan(0);
      for (const w of waits)
        expect(w).toMatch(
          new RegExp(
            `^exposure: notice window for ${pair.caller} to take ${result.newKeyId}, \\d+ s left, then ${old.keyId} is revoked$`,
          ),
        );
      await verifier.reload();
      expect((await ping(old.key)).status).toBe(401);
      const next = await new PgSecretStore(api.pool, api.cfg.SECRETS_KEY).current(pair.caller, pair.target);
      secrets.add(next.key);
      expect((await ping(next.key)).status).toBe(200);
    }, 30_000);
  });

  it("the platform services serve the check route: the key's caller and id for a registered key, 401 otherwise; the list shows each pair's proof", async () => {
    const ok = await fetch(`${api.base}/.well-known/service-key`, { headers: { 'x-api-key': testKeys.operator } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ caller: 'operator', keyId: expect.stringMatching(/^sk_[0-9a-f]{8}$/) });
    const bad = await fetch(`${api.base}/.well-known/service-key`, {
      headers: { 'x-api-key': randomBytes(32).toString('hex') },
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const mail = await fetch(`${api.cfg.NOTIFICATIONS_URL}/.well-known/service-key`, {
      headers: { 'x-api-key': testKeys.notifications },
    });
    expect(mail.status).toBe(200);
    expect(await mail.json()).toMatchObject({ caller: 'worker' });
    expect((await fetch(`${api.cfg.NOTIFICATIONS_URL}/.well-known/service-key`)).status).toBe(401);

    expect(await listed({ caller: 'provisioning', target: 'account-api' })).toMatchObject({ proof: 'holders' });
    expect(await listed({ caller: 'operator', target: 'account-api' })).toMatchObject({ proof: 'per-run' });
    expect(await listed({ caller: 'erp', target: 'event-ingestion' })).toMatchObject({ proof: 'rules' });
  });
});
