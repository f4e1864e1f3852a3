/**
 * Service-key rotation (issue 10) on the run's real Temporal, PostgreSQL and Redis, over HTTP: the
 * ops API starts `rotate:<caller>:<target>:<n>`, a worker on this file's task queue runs it, and a
 * tiny target checks keys with the shared ServiceKeyVerifier (usage flushed every 100 ms). Each test
 * uses pairs of its own. Durations are shortened through the API's configuration (the workflow gets
 * them as input): quiet period 1.5 s, deadline 5 s, poll 250 ms.
 *
 * With RECORD_HISTORIES=1 the successful rotation's history is written to test/fixtures/histories.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createRotationActivities } from '../../activities/service-key-rotation.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import type { ServiceKeyPair } from '../../domain/service-keys/inventory.js';
import { listKeys } from '../../domain/service-keys/registry.js';
import { rotationRecord } from '../../domain/service-keys/rotation.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { requireServiceKey } from '../../domain/service-keys/service-keys.js';
import { ServiceKeyVerifier } from '../../domain/service-keys/verifier.js';
import { startEvents } from '../../services/events/server.js';
import { freePort } from '../../scripts/local-servers.js';
import type { RotationResult } from '../../workflows/definitions.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { workflowBundle } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';

const TARGET = `rt-${randomBytes(3).toString('hex')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let api: TestApi;
let events: Awaited<ReturnType<typeof startEvents>>;
let verifier: ServiceKeyVerifier;
let target: FastifyInstance;
let targetUrl: string;
let store: PgSecretStore;
let worker: Worker;
let workerRun: Promise<void>;
let workerConnection: NativeConnection;
let connection: Connection;
let client: Client;
/** Every key this file saw, to search histories and bodies for. */
const secrets = new Set<string>();

beforeAll(async () => {
  api = await startTestApi({
    EVENTS_PORT: String(await freePort()),
    SERVICE_KEY_ROTATION_ACCEPT_WAIT_MS: '300',
    SERVICE_KEY_ROTATION_QUIET_MS: '1500',
    SERVICE_KEY_ROTATION_POLL_MS: '250',
    SERVICE_KEY_ROTATION_DEADLINE_MS: '5000',
    SERVICE_KEY_ROTATION_ROLLBACK_WAIT_MS: '500',
  });
  const cfg = { ...api.cfg, EVENTS_URL: `http://127.0.0.1:${api.cfg.EVENTS_PORT}` };
  events = await startEvents(cfg);
  store = new PgSecretStore(api.pool, cfg.SECRETS_KEY, 0);

  // the target: any service checking X-API-Key with the shared verifier
  verifier = await ServiceKeyVerifier.start({ target: TARGET, pool: api.pool, refreshMs: 60_000, usageFlushMs: 100 });
  const check = requireServiceKey(verifier);
  target = Fastify();
  target.get('/ping', {
    onRequest: async (req, reply) => {
      try {
        await check(req, reply);
      } catch {
        return reply.code(401).send({ status: 401 });
      }
    },
    handler: async (req) => ({ ok: true, keyId: req.serviceCaller?.keyId }),
  });
  targetUrl = await target.listen({ port: 0, host: '127.0.0.1' });

  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  worker = await Worker.create({
    connection: workerConnection,
    taskQueue: cfg.TEMPORAL_TASK_QUEUE,
    workflowBundle: workflowBundle(),
    activities: createRotationActivities({ pool: api.pool, store, secrets: new PgSecretStore(api.pool, cfg.SECRETS_KEY), eventsUrl: cfg.EVENTS_URL }),
  });
  workerRun = worker.run();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
}, 60_000);

afterAll(async () => {
  worker?.shutdown();
  await workerRun;
  await workerConnection?.close();
  await connection?.close();
  await target?.close();
  await verifier?.close();
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

const ping = (key: string) => fetch(`${targetUrl}/ping`, { headers: { 'x-api-key': key } });

/** Calls the target back to back until stopped; `key()` is what the consumer sends each time. */
function consumer(key: () => Promise<string>) {
  let stop = false;
  const counts = { calls: 0, failed: 0, statuses: new Set<number>() };
  const running = (async () => {
    while (!stop) {
      const k = await key();
      secrets.add(k);
      const res = await ping(k);
      counts.calls++;
      await res.arrayBuffer();
      if (res.status !== 200) {
        if (process.env.DEBUG_ROTATION) console.log('failed call', Date.now(), res.status, verifier.size, verifier.loadedAt, JSON.stringify((await listKeys(api.pool)).filter((x) => x.target === TARGET).map((x) => [x.keyId, x.state, x.createdAt.getTime(), x.revokedAt?.getTime()])));
        counts.failed++;
        counts.statuses.add(res.status);
      }
      await sleep(10);
    }
  })();
  return {
    counts,
    async stop() {
      stop = true;
      await running;
      return counts;
    },
  };
}

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
    expect(await rotationRecord(api.pool, started.workflowId)).toMatchObject({ outcome: 'completed', reason: 'exposure' });

    const history = await handle.fetchHistory();
    const hist = historyText(history);
    expect(hist).toContain(result.newKeyId);
    expect(hist).toContain(old.keyId);
    await expectNoKeyIn(hist);
    await expectNoKeyIn(text);
    const list = await fetch(`${api.base}/api/ops/service-keys`, { headers: { 'x-api-key': testKeys.operator } });
    await expectNoKeyIn(await list.text());
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(path.resolve(import.meta.dirname, '../fixtures/histories/rotate-service-key.json'), JSON.stringify(history, null, 2) + '\n');
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
    const ids = [((await ok.json()) as { workflowId: string }).workflowId, ((await other.json()) as { workflowId: string }).workflowId];
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
