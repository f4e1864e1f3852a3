/**
 * The worker process is killed (SIGKILL) in the middle of a service-key rotation, while the
 * rotation waits between steps 3 and 4 (verifying from the target's usage records), and another
 * worker takes over: the rotation completes exactly once (one new key, one new secret version, one
 * hand-over, the old key revoked) and the consumer calling throughout never sees a failed call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import type { ServiceKeyPair } from '../../domain/service-keys/inventory.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import { rotationSettings } from '../../domain/service-keys/rotation.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { startEvents } from '../../services/events/server.js';
import { freePort } from '../../scripts/local-servers.js';
import type { RotationResult } from '../../domain/service-keys/workflow-contract.js';
import { rotationStatusQuery, type RotationStatus } from '../../workflows/rotate-service-key.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { keyConsumer, startKeyCheckedTarget, testKeys } from '../support/service-keys.js';
import {
  connectTemporalClient,
  rotationActivityDeps,
  shortRotationTimings,
  startRotationWorker,
  type RotationWorker,
  type TemporalClient,
} from '../support/rotation-worker.js';
import { configEnv } from '../support/tenant-platform.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let api: TestApi;
let events: Awaited<ReturnType<typeof startEvents>>;
let target: Awaited<ReturnType<typeof startKeyCheckedTarget>>;
let child: ChildProcess | undefined;
let rotationWorker: RotationWorker | undefined;
let temporal: TemporalClient;
let client: Client;

beforeAll(async () => {
  api = await startTestApi({
    EVENTS_PORT: String(await freePort()),
    ...shortRotationTimings({ quietMs: 2000, deadlineMs: 60_000 }),
  });
  api.cfg.EVENTS_URL = `http://127.0.0.1:${api.cfg.EVENTS_PORT}`;
  events = await startEvents(api.cfg);
  target = await startKeyCheckedTarget(api.pool, `rc-${randomBytes(3).toString('hex')}`);
  temporal = await connectTemporalClient();
  client = temporal.client;
}, 60_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await rotationWorker?.stop();
  await temporal?.close();
  await target?.close();
  await events?.close();
  await api?.close();
});

it(
  'the worker killed while a rotation verifies the switch: another worker completes it exactly once, no call fails',
  { timeout: 120_000 },
  async () => {
    const pair = { caller: `c-${randomBytes(3).toString('hex')}`, target: target.verifier.target };
    const store = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 0);
    await ensureServiceKeys(api.pool, store, [pair as unknown as Pick<ServiceKeyPair, 'caller' | 'target'>]);
    await target.verifier.reload();
    const old = await store.current(pair.caller, pair.target);

    // the real worker process (`npm run start:worker`) with this file's configuration
    child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'worker/index.ts')], {
      cwd: root,
      env: {
        ...(process.env as Record<string, string>),
        ...configEnv(api.cfg),
        LOG_LEVEL: 'error',
        TEMPORAL_LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });

    const consumerStore = new PgSecretStore(api.pool, api.cfg.SECRETS_KEY, 200);
    const traffic = keyConsumer(target.ping, async () => (await consumerStore.current(pair.caller, pair.target)).key);
    const res = await fetch(`${api.base}/api/ops/service-keys/${pair.caller}/${pair.target}/rotate`, {
      method: 'POST',
      headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(202);
    const { workflowId } = (await res.json()) as { workflowId: string };
    const handle = client.workflow.getHandle(workflowId);

    // caught between steps: the consumer has the new key, the old one is not yet silent long enough
    await expect
      .poll(
        async () =>
          ((await handle.query(rotationStatusQuery).catch(() => undefined)) as RotationStatus | undefined)?.step,
        { timeout: 60_000, interval: 100 },
      )
      .toBe('verify-switch');
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    child = undefined;
    await new Promise((r) => setTimeout(r, 1000));

    // another worker takes over
    rotationWorker = await startRotationWorker(
      api.cfg.TEMPORAL_TASK_QUEUE,
      rotationActivityDeps(api.cfg, api.pool, store, {
        starter: { temporal: client, taskQueue: api.cfg.TEMPORAL_TASK_QUEUE, settings: rotationSettings(api.cfg) },
      }),
    );

    const result = (await handle.result()) as RotationResult;
    const counts = await traffic.stop();
    expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
    expect(counts.failed).toBe(0);

    // exactly once: two keys (old revoked, one new current), two secret versions, each step run once
    const keys = await listKeys(api.pool, pair);
    expect(Object.fromEntries(keys.map((k) => [k.keyId, k.state]))).toEqual({
      [old.keyId]: 'revoked',
      [result.newKeyId]: 'current',
    });
    const { rows } = await api.pool.query(
      `SELECT count(*)::int AS n FROM service_key_secrets WHERE caller = $1 AND target = $2`,
      [pair.caller, pair.target],
    );
    expect(rows[0].n).toBe(2);
    const scheduled = (await handle.fetchHistory()).events!.flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    const times = (name: string) => scheduled.filter((n) => n === name).length;
    expect([
      times('generateRotationKey'),
      times('makeRotationSecretCurrent'),
      times('promoteRotationKey'),
      times('revokeRotationKey'),
    ]).toEqual([1, 1, 1, 1]);
    await target.verifier.reload();
    expect((await target.ping(old.key)).status).toBe(401);
    expect((await target.ping((await store.current(pair.caller, pair.target)).key)).status).toBe(200);
  },
);
