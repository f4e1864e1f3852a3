/**
 * The controller as its own process (services/tenant-controller/index.ts), killed with SIGKILL on
 * the real API server: inside a reconcile (its apply waiting on PostgreSQL) and inside a delete
 * (the tenant cancelled, the finalizer still on). The next process takes over once the Lease of
 * the killed one expires: exactly one workflow per resource, the delete completes, the finalizer is
 * removed once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import {
  configEnv,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../../support/tenant-platform.js';
import {
  controllerScope,
  kube,
  kubeCondition,
  tenantClientEvents,
  tenantClientJson,
  waitForTenantClient,
} from '../../support/kubernetes.js';
import { lockWaiters } from '../../support/db-locks.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const scope = controllerScope();
let p: TenantPlatform;
let child: ChildProcess | undefined;

/** The controller process, with this file's configuration and label selector. */
function startControllerProcess(): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(root, 'services/tenant-controller/index.ts')], {
    cwd: root,
    env: { ...(process.env as Record<string, string>), ...configEnv(p.cfg), LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function killController() {
  const proc = child!;
  child = undefined;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGKILL');
  await exited;
}

beforeAll(async () => {
  p = await startTenantPlatform({ ...scope.env, TENANT_SOAK_PERIOD: '3s' });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await p?.close();
});

const ready = (o: Parameters<typeof kubeCondition>[0]) => kubeCondition(o, 'Ready')?.status === 'True';
const count = (name: string, reason: string) => tenantClientEvents(name).filter((e) => e.reason === reason).length;

async function workflowRuns(name: string): Promise<number> {
  let n = 0;
  for await (const _ of p.temporal.workflow.list({ query: `WorkflowId = '${tenantWorkflowId(name)}'` })) n++;
  return n;
}

it('killed inside a reconcile and inside a delete: one workflow, the delete completes, the finalizer goes once', async () => {
  const name = uniqueTenant('kill');
  child = startControllerProcess();

  // hold tenant_status so the controller's apply of the new object waits inside its read of the tenant's status
  const lock = await p.pool.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE tenant_status IN ACCESS EXCLUSIVE MODE');
    expect(kube(['apply', '-f', '-'], tenantClientJson(name, scope.label)).ok).toBe(true);
    await expect.poll(() => lockWaiters(p.pool, 'tenant_status'), { timeout: 60_000 }).toBeGreaterThan(0);
    await killController();
  } finally {
    await lock.query('ROLLBACK');
    lock.release();
  }
  // the killed apply started nothing
  expect(await workflowRuns(name)).toBe(0);

  child = startControllerProcess();
  await waitForTenantClient(name, ready, 90_000);
  expect(await workflowRuns(name)).toBe(1);
  expect(count(name, 'Applied')).toBe(1);

  // killed between the delete's cancel and the end of the soak period
  expect(kube(['delete', 'tc', name, '--wait=false']).ok).toBe(true);
  await waitForTenantClient(name, (o) => kubeCondition(o, 'Ready')?.reason === 'Deleting');
  await killController();
  // the workflow deprovisions on its own while no controller runs; the finalizer waits for one
  await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned');
  expect(kube(['get', 'tc', name, '-o', 'jsonpath={.metadata.finalizers}']).out).toContain('plana.dev/deprovision');

  child = startControllerProcess();
  await waitForTenantClient(name, (o) => o === undefined, 60_000);
  await expect.poll(() => count(name, 'FinalizerRemoved'), { timeout: 10_000 }).toBe(1);
  await sleep(2_000); // more passes of the controller: still once
  expect(count(name, 'FinalizerRemoved')).toBe(1);
  expect(await workflowRuns(name)).toBe(1);
}, 240_000);
