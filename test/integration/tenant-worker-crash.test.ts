/**
 * The worker process is killed (SIGKILL) in the middle of provisioning, while it is creating the
 * tenant's route, and another worker takes over: the tenant still turns Ready with exactly one of
 * each resource, one `client.provisioned` event and one welcome e-mail. And killed in the middle of
 * deprovisioning (a must-finish step): the step is retried within seconds, the teardown completes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { temporal as proto } from '@temporalio/proto';
import { Redis } from 'ioredis';
import type { Config } from '../../lib/config.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { runTenantAction } from '../../domain/tenants/operator-actions.js';
import {
  applyTenant,
  configEnv,
  deleteTenant,
  describe,
  health,
  isReady,
  mailsTo,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';
import { lockWaiters } from '../support/db-locks.js';
import { recordHistory } from '../support/record-history.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const TimeoutType = proto.api.enums.v1.TimeoutType;
let p: TenantPlatform;
let child: ChildProcess | undefined;

/** The real worker process (`npm run start:worker`), with this file's configuration. */
function startWorkerProcess(cfg: Config): ChildProcess {
  const env = {
    ...(process.env as Record<string, string>),
    ...configEnv(cfg),
    LOG_LEVEL: 'error',
    TEMPORAL_LOG_LEVEL: 'ERROR',
  };
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'worker/index.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return proc;
}

/** Waits until the named pending activity of the tenant's workflow is scheduled again (attempt 2+); how and when its attempt ended. */
async function retryOf(name: string, activity: string, timeoutMs: number) {
  const handle = p.temporal.workflow.getHandle(tenantWorkflowId(name));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { raw } = await handle.describe();
    const pending = raw.pendingActivities?.find((a) => a.activityType?.name === activity);
    if (pending && (pending.attempt ?? 1) >= 2) {
      const type = pending.lastFailure?.timeoutFailureInfo?.timeoutType;
      return { atMs: Date.now(), timeoutType: type === undefined || type === null ? 'none' : TimeoutType[type] };
    }
    if (Date.now() > deadline) throw new Error(`${activity} of ${name} not retried within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Holds the route table until `during` has run (a worker's route step waits for it meanwhile). */
async function withRoutesLocked(during: () => Promise<void>): Promise<void> {
  const lock = await p.pool.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE tenant_routes IN EXCLUSIVE MODE');
    await during();
  } finally {
    await lock.query('ROLLBACK');
    lock.release();
  }
}

/** Until a statement waits for the route table's lock. */
const routeStepWaiting = () =>
  expect.poll(() => lockWaiters(p.pool, 'tenant_routes'), { timeout: 30_000 }).toBeGreaterThan(0);

/** Kills the worker process (SIGKILL); when. */
async function killWorkerProcess(): Promise<number> {
  child!.kill('SIGKILL');
  await new Promise((resolve) => child!.once('exit', resolve));
  child = undefined;
  return Date.now();
}

/** When the tenant's route row was made (polled), once it is there. */
async function routeMadeAfter(name: string, since: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await p.pool.query(`SELECT 1 FROM tenant_routes WHERE tenant = $1`, [name]);
    if (rows.length) return Date.now();
    if (Date.now() > deadline) throw new Error(`no route for ${name} ${Date.now() - since} ms after the kill`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  p = await startTenantPlatform({}, { worker: false });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await p?.close();
});

it(
  'survives a worker killed mid-provisioning: Ready with exactly one of each resource, one event, one e-mail',
  { timeout: 180_000 },
  async () => {
    const name = uniqueTenant('crash');
    const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
    child = startWorkerProcess(p.cfg);

    // hold the route table so the worker is caught inside its createRoute step
    let killedAt = 0;
    await withRoutesLocked(async () => {
      expect(await applyTenant(p, name)).toBe('created');
      // the route comes right after the database (the API user is made through it)
      await waitForStatus(p, name, (s) => s.resources.database.state === 'Created', 120_000);
      await routeStepWaiting();
      killedAt = await killWorkerProcess();
    });

    // with no worker to answer the status query, describe shows the status mirrored in PostgreSQL
    const whileDown = await describe(p, name);
    expect(whileDown.statusSource).toBe('mirror');
    expect(whileDown.status.resources.database).toMatchObject({ synced: 'True', state: 'Created' });
    expect(whileDown.status.resources.apiUser).toMatchObject({ state: 'Pending' });
    expect(whileDown.status.resources.route).toMatchObject({ state: 'Pending' });

    // another worker takes over: the killed step runs again within seconds of the kill (a local
    // activity's workflow task times out; an activity's heartbeats stop), not after the step's
    // 30 s start-to-close timeout
    await p.startWorker();
    const routed = await routeMadeAfter(name, killedAt, 60_000);
    expect(routed - killedAt).toBeLessThan(25_000);
    const status = await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined, 120_000);
    // a replay fixture: the quick steps as local activities, one redone after a kill
    await recordHistory(
      p.temporal.workflow.getHandle(tenantWorkflowId(name)),
      'tenant-lifecycle-worker-killed-quick-step',
    );
    expect(status.steps.filter((s) => s.step === 'clone-database' && s.outcome === 'ok')).toHaveLength(1);

    const one = async (sql: string, params: unknown[]) => (await p.pool.query(sql, params)).rows[0].n;
    expect(await one('SELECT count(*)::int AS n FROM pg_database WHERE datname = $1', [host])).toBe(1);
    expect(await one('SELECT count(*)::int AS n FROM tenant_routes WHERE tenant = $1', [name])).toBe(1);
    expect(await one('SELECT count(*)::int AS n FROM tenants WHERE name = $1', [name])).toBe(1);
    expect(await one('SELECT count(*)::int AS n FROM tenant_erp_credentials WHERE tenant = $1', [name])).toBe(1);
    expect(readdirSync(p.cfg.FILESTORE_ROOT).filter((d) => d === name)).toHaveLength(1);
    const schedules = [];
    for await (const s of p.temporal.schedule.list()) if (s.scheduleId === `backup:${name}`) schedules.push(s);
    expect(schedules).toHaveLength(1);
    expect(p.chatChannels().filter((c) => c.name === `support-${name}-000042`)).toHaveLength(1);
    expect(await health(p, host)).toMatchObject({ healthy: true });

    const redis = new Redis(p.cfg.REDIS_URL);
    try {
      const entries = await redis.xrange(p.cfg.EVENTS_STREAM, '-', '+');
      const provisioned = entries
        .map(([, f]) => JSON.parse(f[f.indexOf('event') + 1]!) as { type: string; subject: string })
        .filter((e) => e.type === 'client.provisioned' && e.subject === name);
      expect(provisioned).toHaveLength(1);
    } finally {
      redis.disconnect();
    }
    await expect.poll(() => mailsTo(p, `owner@${name}.test`).length, { timeout: 30_000 }).toBe(1);
    // and it stays one: nothing else arrives while the consumer keeps running
    const firstMail = mailsTo(p, `owner@${name}.test`)[0];
    expect(firstMail?.subject).toContain(name);
  },
);

it(
  'a must-finish step (deprovisioning) on a killed worker is retried after its heartbeat timeout, not its 2 minutes',
  { timeout: 180_000 },
  async () => {
    await p.stopWorker();
    const name = uniqueTenant('crashdown');
    child = startWorkerProcess(p.cfg);
    expect(await applyTenant(p, name)).toBe('created');
    await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined, 120_000);

    let killedAt = 0;
    // the worker's remove-route step waits for the route table when it is killed
    await withRoutesLocked(async () => {
      await deleteTenant(p, name);
      await waitForStatus(p, name, (s) => s.phase === 'Cancelled', 60_000);
      await runTenantAction({ pool: p.pool, temporal: p.temporal, config: p.cfg }, name, 'delete');
      await routeStepWaiting();
      killedAt = await killWorkerProcess();
    });

    const retried = await retryOf(name, 'removeRoute', 30_000);
    expect(retried.timeoutType).toBe('TIMEOUT_TYPE_HEARTBEAT');
    expect(retried.atMs - killedAt).toBeLessThan(20_000);

    await p.startWorker();
    await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned', 120_000);
    // a replay fixture: a must-finish step retried after its heartbeat timeout
    await recordHistory(
      p.temporal.workflow.getHandle(tenantWorkflowId(name)),
      'tenant-lifecycle-worker-killed-teardown-step',
    );
    const routes = await p.pool.query(`SELECT 1 FROM tenant_routes WHERE tenant = $1`, [name]);
    expect(routes.rows).toHaveLength(0);
  },
);
