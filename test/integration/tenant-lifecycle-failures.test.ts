/**
 * The tenant lifecycle on its failure paths, with fake peers (test/support/fake-tenant-peers.ts)
 * on the run's real Temporal dev server: a peer away for longer than any retry policy's attempts,
 * a business failure while deprovisioning, the readiness deadline passing, operator actions racing
 * a reconcile, and continue-as-new with messages in flight. A long-lived tenant workflow must never
 * end in failure because a peer was away: each test asserts what the status says and that the
 * workflow is still running (or, once deprovisioned, that it completed rather than failed).
 *
 * Retry intervals are shortened (settings.retryIntervals), so "longer than the retries last" is
 * counted in attempts: a reconcile step's policy gives up after 4.
 *
 * With RECORD_HISTORIES=1 the histories of these runs are written to test/fixtures/histories,
 * where the replay test keeps the current code honest against them.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { TenantErrorType, type TenantStatus } from '../../domain/tenants/types.js';
import {
  applySignal,
  cancelUpdate,
  deleteUpdate,
  reactivateUpdate,
  retryChatRoomUpdate,
  statusQuery,
  tenantWorkflowId,
  type LifecycleSettings,
} from '../../domain/tenants/workflow-contract.js';
import type { tenantLifecycle } from '../../workflows/index.js';
import { tenantSpec, useLifecycleWorker } from '../support/lifecycle-worker.js';

const lifecycle = useLifecycleWorker('lifecycle-failures');
const { taskQueue, peers } = lifecycle;
const client = () => lifecycle.client;

afterEach(() => peers.reset());

const settings = (overrides: Partial<LifecycleSettings> = {}): LifecycleSettings => ({
  readyDeadlineMs: 60_000,
  soakPeriodMs: 3_600_000,
  probeIntervalMs: 100,
  reconcileBackoffMaxMs: 500,
  retryIntervals: { initialMs: 20, maximumMs: 100 },
  ...overrides,
});

let n = 0;
const uniqueName = (prefix: string) => `${prefix}-${Date.now().toString(36)}${(n++).toString(36)}`;

async function start(prefix: string, overrides: Partial<LifecycleSettings> = {}) {
  const name = uniqueName(prefix);
  const handle = await client().workflow.start<typeof tenantLifecycle>('tenantLifecycle', {
    workflowId: tenantWorkflowId(name),
    taskQueue,
    args: [
      {
        name,
        uid: `uid-${name}`,
        generation: 1,
        spec: tenantSpec(name),
        settings: settings(overrides),
      },
    ],
  });
  return { name, handle };
}

type Handle = WorkflowHandle<typeof tenantLifecycle>;

/** Polls the status query until `ok` holds; fails with the last status seen. */
async function waitForStatus(
  handle: Handle,
  ok: (s: TenantStatus) => boolean,
  timeout = 30_000,
): Promise<TenantStatus> {
  const until = Date.now() + timeout;
  let last: TenantStatus | undefined;
  while (Date.now() < until) {
    last = await handle.query(statusQuery).catch(() => undefined);
    if (last && ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  const run = await handle.describe().then(
    (d) => d.status.name,
    () => 'unknown',
  );
  throw new Error(
    `status never matched within ${timeout} ms (workflow ${run}); last: ${JSON.stringify(last, null, 1)}`,
  );
}

const condition = (s: TenantStatus, type: 'Synced' | 'Ready') => s.conditions.find((c) => c.type === type)!;
const isReady = (s: TenantStatus) => condition(s, 'Ready').status === 'True';

/** The reason an update's validator gave for refusing it. */
async function refusal(update: Promise<unknown>): Promise<string> {
  const err = await update.then(
    () => expect.fail('the update was accepted'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  return (err as WorkflowUpdateFailedError).cause?.message ?? '';
}

async function runStatus(handle: Handle): Promise<string> {
  return (await handle.describe()).status.name;
}

async function recordHistory(handle: Handle, file: string, runId?: string): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const history = await client().workflow.getHandle(handle.workflowId, runId).fetchHistory();
  const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');
  writeFileSync(path.join(fixtures, `${file}.json`), JSON.stringify(history, null, 2) + '\n');
}

describe('a peer away for longer than its retries last', () => {
  it('the events service down when the tenant turns Ready: the event goes out once it is back, the workflow lives on', async () => {
    peers.failFor('publishProvisionedEvent', 12, 'events service unavailable: connect ECONNREFUSED 127.0.0.1:3001');
    const { handle } = await start('events-down');

    const waiting = await waitForStatus(handle, (s) => s.currentStep === 'publish-provisioned-event' && isReady(s));
    expect(waiting.provisionedEventId).toBeUndefined();
    expect(await runStatus(handle)).toBe('RUNNING');

    const ready = await waitForStatus(handle, (s) => s.provisionedEventId !== undefined && s.currentStep === 'ready');
    expect(ready.provisionedEventId).toBe(`client.provisioned:${ready.name}:1`);
    expect(ready.phase).toBe('Ready');
    expect(condition(ready, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });
    expect(peers.count('publishProvisionedEvent')).toBeGreaterThanOrEqual(13);
    expect(await runStatus(handle)).toBe('RUNNING');
  });

  it('the route table unreachable for many reconciles: Synced=False with the cause, then Ready once it answers', async () => {
    peers.down.set('createRoute', 'connect ECONNREFUSED 127.0.0.1:5432 (route table)');
    const { handle } = await start('route-down');

    const failing = await waitForStatus(
      handle,
      (s) => s.resources.route.state === 'Failed' && condition(s, 'Synced').status === 'False',
    );
    expect(condition(failing, 'Synced')).toMatchObject({
      reason: 'ReconcileError',
      message: expect.stringContaining('route: connect ECONNREFUSED'),
    });
    expect(condition(failing, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Creating',
      message: expect.stringContaining('Unready resources: route'),
    });
    // it keeps reconciling: more attempts than one reconcile's retry policy allows
    await expect.poll(() => peers.count('createRoute'), { timeout: 20_000 }).toBeGreaterThan(12);
    expect(await runStatus(handle)).toBe('RUNNING');

    peers.down.delete('createRoute');
    const ready = await waitForStatus(handle, (s) => isReady(s) && s.provisionedEventId !== undefined);
    expect(condition(ready, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });
    expect(ready.resources.route).toMatchObject({ synced: 'True', state: 'Created' });
    expect(await runStatus(handle)).toBe('RUNNING');
    await recordHistory(handle, 'tenant-lifecycle-failed-step-recovered');
  });

  it('the chat server down: Ready with the room failed (non-fatal); retry chat-room creates it once the chat is back', async () => {
    peers.down.set('ensureChatRoom', 'chat server unavailable: connect ECONNREFUSED');
    const { handle } = await start('chat-down');

    const ready = await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    expect(ready.resources.chatRoom).toMatchObject({
      synced: 'False',
      state: 'Failed',
      message: expect.stringContaining('chat server unavailable'),
    });
    expect(condition(ready, 'Synced')).toMatchObject({
      status: 'True',
      message: expect.stringContaining('retry chat-room'),
    });
    expect(await runStatus(handle)).toBe('RUNNING');

    peers.down.delete('ensureChatRoom');
    await handle.executeUpdate(retryChatRoomUpdate);
    // the room is marked Created inside the retry's reconcile; the conditions follow at its end
    const retried = await waitForStatus(
      handle,
      (s) => s.resources.chatRoom.state === 'Created' && condition(s, 'Synced').message === '',
    );
    expect(condition(retried, 'Synced')).toMatchObject({ status: 'True', message: '' });
    expect(retried.resources.chatRoom).toMatchObject({ synced: 'True', state: 'Created' });
    expect(await runStatus(handle)).toBe('RUNNING');
  });

  it('the tenant never healthy: Ready=False Unavailable at the deadline with what blocks, and Ready once it recovers', async () => {
    peers.healthy = false;
    try {
      const { handle } = await start('deadline', { readyDeadlineMs: 1_500 });
      const late = await waitForStatus(handle, (s) => condition(s, 'Ready').reason === 'Unavailable');
      expect(late.phase).toBe('Unavailable');
      expect(condition(late, 'Ready')).toMatchObject({
        status: 'False',
        reason: 'Unavailable',
        message: expect.stringMatching(/^not Ready 2s after the apply; 503: the ERP worker is not running/),
      });
      expect(await runStatus(handle)).toBe('RUNNING');

      peers.healthy = true;
      const ready = await waitForStatus(handle, (s) => isReady(s) && s.phase === 'Ready');
      expect(condition(ready, 'Ready').reason).toBe('Available');
      expect(await runStatus(handle)).toBe('RUNNING');
    } finally {
      peers.healthy = true;
    }
  });
});

describe('a tenant whose template is missing', () => {
  it('installs its database from scratch, route first; the readiness deadline counts from the end of the install', async () => {
    peers.templatesMissing = true;
    // longer than the deadline, and an ERP that needs a moment after it (one probe sees it unhealthy);
    // the deadline leaves the steps after the install (API user, rules, sign-in, room) room on a busy machine
    peers.slow.set('installTenantDatabase', 6_000);
    peers.unhealthyProbes = 1;
    const { name, handle } = await start('scratch', { readyDeadlineMs: 4_000 });
    const ready = await waitForStatus(handle, (s) => isReady(s) && s.phase === 'Ready');
    expect(ready.resources.database).toMatchObject({
      synced: 'True',
      state: 'Created',
      message: 'installed from scratch (template erp_tpl_pro_18 was missing)',
    });
    const steps = ready.steps.map((step) => step.step);
    expect(steps.indexOf('create-route')).toBeLessThan(steps.indexOf('install-database'));
    expect(steps.indexOf('install-database')).toBeLessThan(steps.indexOf('ensure-api-user'));
    expect(peers.count('installTenantDatabase')).toBe(1);

    const published = peers.published.get(name)!;
    // while the install ran: the database pending, and Ready=False says why
    const installing = published.find((s) => s.currentStep === 'install-database');
    expect(installing?.resources.database).toMatchObject({
      synced: 'False',
      state: 'Pending',
      message: 'installing the pro module set from scratch (template database "erp_tpl_pro_18" does not exist)',
    });
    expect(condition(installing!, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Creating',
      message: expect.stringContaining('/web/health answers 503 until it is done'),
    });
    // never Unavailable nor ReconcileError, though the install outlasted the deadline counted from the apply
    expect(
      published
        .filter((s) => s.phase === 'Unavailable' || condition(s, 'Synced').reason === 'ReconcileError')
        .map((s) => ({ phase: s.phase, ready: condition(s, 'Ready').message })),
    ).toEqual([]);
    expect(await runStatus(handle)).toBe('RUNNING');
    await recordHistory(handle, 'tenant-lifecycle-install-from-scratch');
  });
});

describe('a Ready tenant is probed', () => {
  it('turns Ready=False naming the database when it stops answering, and Ready again when it is back', async () => {
    const { name, handle } = await start('watch', { readyProbeIntervalMs: 200 });
    const ready = await waitForStatus(handle, (s) => isReady(s) && s.phase === 'Ready');
    const database = ready.resources.database.externalName;
    expect(database).toContain(name);
    peers.healthy = false;
    try {
      const lost = await waitForStatus(handle, (s) => condition(s, 'Ready').status === 'False');
      expect(lost.phase).toBe('Unavailable');
      expect(condition(lost, 'Ready')).toMatchObject({
        reason: 'Unavailable',
        message: `tenant database ${database} does not answer while Ready: 503: the ERP worker is not running`,
      });
    } finally {
      peers.healthy = true;
    }
    const back = await waitForStatus(handle, (s) => isReady(s) && s.phase === 'Ready');
    expect(back.steps.map((r) => `${r.step} ${r.outcome}`)).toEqual(
      expect.arrayContaining(['probe-while-ready failed', 'probe-while-ready ok']),
    );
    expect(await runStatus(handle)).toBe('RUNNING');
    await recordHistory(handle, 'tenant-lifecycle-probe-while-ready');
  });
});

describe('deprovisioning that must finish', () => {
  it('DROP DATABASE refused for many attempts (someone still connected): deprovisioned once it goes through', async () => {
    const { handle } = await start('drop-refused', { soakPeriodMs: 1_000 });
    await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    peers.failFor('dropTenantDatabase', 12, 'database "x" is being accessed by other users');
    const dropsBefore = peers.count('dropTenantDatabase');

    await handle.executeUpdate(cancelUpdate);
    const refused = await waitForStatus(handle, (s) => s.currentStep === 'drop-database');
    expect(refused.phase).toBe('Deprovisioning');
    expect(await runStatus(handle)).toBe('RUNNING');

    const final = await handle.result();
    expect(peers.count('dropTenantDatabase') - dropsBefore).toBeGreaterThanOrEqual(13);
    expect(final.phase).toBe('Deprovisioned');
    expect(condition(final, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });
    for (const kind of ['route', 'database', 'filestore', 'backupSchedule'] as const)
      expect(final.resources[kind].state, kind).toBe('Deleted');
    expect(final.resources.chatRoom.state).toBe('Archived');
    expect(await runStatus(handle)).toBe('COMPLETED');
    await recordHistory(handle, 'tenant-lifecycle-cancel-soak-deprovision');
  });

  it('a step that fails for a business reason is recorded and the rest is still torn down', async () => {
    const { handle } = await start('half-made');
    await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    peers.businessFailure.set('wipeFilestore', {
      type: TenantErrorType.PathOutsideRoot,
      message: 'filestore path escapes FILESTORE_ROOT',
    });
    try {
      await handle.executeUpdate(cancelUpdate);
      await handle.executeUpdate(deleteUpdate);
      const final = await handle.result();
      expect(final.phase).toBe('Deprovisioned');
      expect(final.resources.filestore).toMatchObject({
        state: 'Failed',
        message: 'left behind: filestore path escapes FILESTORE_ROOT',
      });
      expect(final.resources.backupSchedule.state).toBe('Deleted');
      expect(final.resources.database.state).toBe('Deleted');
      expect(condition(final, 'Synced')).toMatchObject({
        status: 'False',
        reason: 'ReconcileError',
        message: expect.stringContaining('filestore: left behind'),
      });
      expect(await runStatus(handle)).toBe('COMPLETED');
    } finally {
      peers.businessFailure.delete('wipeFilestore');
    }
  });
});

describe('operator actions racing a reconcile', () => {
  it('cancel and reactivate while a step runs: the reconcile finishes, the tenant stays and is Ready', async () => {
    peers.slow.set('cloneTenantDatabase', 1_500);
    try {
      const { handle } = await start('race-reactivate');
      await waitForStatus(handle, (s) => s.currentStep === 'clone-database');
      expect((await handle.executeUpdate(cancelUpdate)).phase).toBe('Cancelled');
      expect((await handle.executeUpdate(reactivateUpdate)).cancelledAt).toBeUndefined();
      const ready = await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
      expect(ready.phase).toBe('Ready');
      expect(ready.steps.map((s) => s.step)).toEqual(
        expect.arrayContaining(['cancel', 'reactivate', 'publish-provisioned-event']),
      );
      expect(await runStatus(handle)).toBe('RUNNING');
      await recordHistory(handle, 'tenant-lifecycle-cancel-reactivate');
    } finally {
      peers.slow.delete('cloneTenantDatabase');
    }
  });

  it('cancel and delete while a step runs: the reconcile ends, then the tenant is deprovisioned', async () => {
    // a step that is an activity of its own (a local one holds the workflow task, and so the query, while it runs)
    peers.slow.set('ensureTierModules', 1_500);
    try {
      const { handle } = await start('race-delete');
      await waitForStatus(handle, (s) => s.currentStep === 'ensure-tier-modules');
      await handle.executeUpdate(cancelUpdate);
      await handle.executeUpdate(deleteUpdate);
      const final = await handle.result();
      expect(final.phase).toBe('Deprovisioned');
      expect(final.resources.filestore.state).toBe('Deleted');
      // cancelled before it was Ready: no client.provisioned (no welcome e-mail for a tenant on its way out)
      expect(final.provisionedEventId).toBeUndefined();
      expect(final.steps.map((s) => s.step)).not.toContain('publish-provisioned-event');
      expect(await runStatus(handle)).toBe('COMPLETED');
    } finally {
      peers.slow.delete('ensureTierModules');
    }
  });

  it('a second cancel, a delete before a cancel and a reactivate of an active tenant are refused, and change nothing', async () => {
    const { handle } = await start('refused');
    await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    expect(await refusal(handle.executeUpdate(deleteUpdate))).toMatch(/is active: cancel it first/);
    expect(await refusal(handle.executeUpdate(reactivateUpdate))).toMatch(/is not cancelled/);
    await handle.executeUpdate(cancelUpdate);
    expect(await refusal(handle.executeUpdate(cancelUpdate))).toMatch(/already cancelled/);
    const status = await handle.query(statusQuery);
    expect(status.phase).toBe('Cancelled');
    expect(await runStatus(handle)).toBe('RUNNING');
  });
});

describe('continue-as-new', () => {
  it('carries the state and what woke it: a new spec, then a chat-room retry, each reconciled in the next run', async () => {
    const { name, handle } = await start('continue', { historyLimit: 40 });
    await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    const firstRunId = (await handle.describe()).runId;

    // a new spec arrives while the history is past its limit: the run continues as new first
    await handle.signal(applySignal, {
      uid: `uid-${name}`,
      generation: 2,
      spec: tenantSpec(name, { tier: 'enterprise' }),
    });
    const next = await waitForStatus(
      handle,
      (s) => s.observedGeneration === 2 && isReady(s) && s.currentStep === 'ready',
    );
    const secondRunId = (await handle.describe()).runId;
    expect(secondRunId).not.toBe(firstRunId);
    expect(next.steps.map((s) => s.step)).toContain('continue-as-new');
    expect(condition(next, 'Synced')).toMatchObject({ status: 'True', observedGeneration: 2 });
    // the event of generation 1 is not emitted again
    expect(next.provisionedEventId).toBe(`client.provisioned:${name}:1`);

    // an update in flight when the run continues as new: it gets its answer, and its retry is carried over
    const chatRoomsBefore = peers.count('ensureChatRoom');
    const retried = await handle.executeUpdate(retryChatRoomUpdate);
    expect(retried.steps.at(-1)?.step).toBe('retry-chat-room');
    await expect.poll(() => peers.count('ensureChatRoom'), { timeout: 20_000 }).toBeGreaterThan(chatRoomsBefore);
    await expect.poll(async () => (await handle.describe()).runId, { timeout: 20_000 }).not.toBe(secondRunId);
    expect(await runStatus(handle)).toBe('RUNNING');
    await recordHistory(handle, 'tenant-lifecycle-continue-as-new', firstRunId);
  });
});

describe('a tier change', () => {
  it("installs the new tier's modules; until the ERP installs them the new generation is not Ready; a downgrade keeps them", async () => {
    const { name, handle } = await start('tier');
    await waitForStatus(handle, (s) => isReady(s) && s.currentStep === 'ready');
    const spec = (tier: 'starter' | 'pro' | 'enterprise') => tenantSpec(name, { tier });

    // the ERP refuses the install for a while: the database is not what generation 2 asks for
    peers.failFor('ensureTierModules', 8, 'the ERP of the tenant answered HTTP 503');
    await handle.signal(applySignal, { uid: `uid-${name}`, generation: 2, spec: spec('enterprise') });
    const failing = await waitForStatus(
      handle,
      (s) => s.resources.database.state === 'Failed' && s.currentStep === 'waiting-to-retry',
    );
    expect(condition(failing, 'Synced')).toMatchObject({
      status: 'False',
      observedGeneration: 2,
      message: expect.stringContaining('database: the ERP of the tenant answered HTTP 503'),
    });
    expect(condition(failing, 'Ready')).toMatchObject({
      status: 'False',
      message: expect.stringContaining('Unready resources: database'),
    });

    const upgraded = await waitForStatus(
      handle,
      (s) => s.observedGeneration === 2 && isReady(s) && s.currentStep === 'ready',
    );
    const step = upgraded.steps.filter((s) => s.step === 'ensure-tier-modules').at(-1)!;
    expect(step).toMatchObject({
      outcome: 'ok',
      message: expect.stringMatching(/^enterprise modules installed: .*mrp/),
    });
    expect(upgraded.resources.database).toMatchObject({ synced: 'True', state: 'Created' });

    // a downgrade: nothing is uninstalled, the step says what stays
    await handle.signal(applySignal, { uid: `uid-${name}`, generation: 3, spec: spec('starter') });
    const downgraded = await waitForStatus(
      handle,
      (s) => s.observedGeneration === 3 && isReady(s) && s.currentStep === 'ready',
    );
    expect(downgraded.steps.filter((s) => s.step === 'ensure-tier-modules').at(-1)!.message).toMatch(
      /^starter modules present \(\d+\); kept from a higher tier \(a downgrade uninstalls nothing\): .*mrp/,
    );
    expect(await runStatus(handle)).toBe('RUNNING');
    await recordHistory(handle, 'tenant-lifecycle-tier-modules');
  });
});
