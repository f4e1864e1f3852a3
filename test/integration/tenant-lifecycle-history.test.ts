/**
 * What one reconcile costs in the tenant workflow's history, with fake peers (test/support/fake-tenant-peers.ts)
 * on the run's real Temporal dev server: no patch markers (the first release's epoch); the `CurrentStep` search attribute (a command and a
 * visibility write each) names the steps the workflow waits on, once each; the attributes the start
 * set are not upserted again; a quick step (a local activity) is published with the next step, and
 * the last published status is the one the workflow holds.
 *
 * With RECORD_HISTORIES=1 the history is written to test/fixtures/histories, where the replay test
 * keeps the current code honest against it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type WorkflowHandle } from '@temporalio/client';
import {
  applySignal,
  cancelUpdate,
  statusQuery,
  tenantWorkflowId,
  type LifecycleSettings,
} from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { startSearchAttributes } from '../../domain/tenants/operator-actions.js';
import type { tenantLifecycle } from '../../workflows/index.js';
import { tenantSpec, useLifecycleWorker } from '../support/lifecycle-worker.js';

const lifecycle = useLifecycleWorker('lifecycle-history');
const { taskQueue, peers } = lifecycle;
const client = () => lifecycle.client;

const settings: LifecycleSettings = {
  readyDeadlineMs: 60_000,
  soakPeriodMs: 3_600_000,
  probeIntervalMs: 100,
  reconcileBackoffMaxMs: 500,
  retryIntervals: { initialMs: 20, maximumMs: 100 },
};

/** Starts a tenant workflow the way the controller does (its search attributes set at the start). */
async function start(overrides: Partial<LifecycleSettings> = {}) {
  const name = `history-${Date.now().toString(36)}`;
  const spec = tenantSpec(name);
  const handle = await client().workflow.start<typeof tenantLifecycle>('tenantLifecycle', {
    workflowId: tenantWorkflowId(name),
    taskQueue,
    args: [{ name, uid: `uid-${name}`, generation: 1, spec, settings: { ...settings, ...overrides } }],
    typedSearchAttributes: startSearchAttributes(name, spec),
  });
  return { name, handle, spec };
}

/** The search attributes each upsert of the history set, by name, in order (JSON-encoded values). */
function upserts(history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>) {
  return (history.events ?? []).flatMap((event) => {
    const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields) return [];
    return [
      Object.fromEntries(
        Object.entries(fields).map(([key, payload]) => [key, Buffer.from(payload.data ?? []).toString()]),
      ),
    ];
  });
}

describe('one reconcile in the history', () => {
  it('CurrentStep names each step the workflow waits on once; the start attributes are not set again; the last published status is the held one', async () => {
    const { name, handle } = await start();
    await expect.poll(() => handle.query(statusQuery).then((s) => s.currentStep), { timeout: 30_000 }).toBe('ready');

    const history = await handle.fetchHistory();
    const set = upserts(history);
    const steps = set.flatMap((fields) => (fields.CurrentStep ? [JSON.parse(fields.CurrentStep) as string] : []));
    expect(steps).toEqual([
      'clone-database',
      'ensure-api-user',
      'ensure-tier-modules',
      'ensure-erp-sign-in',
      'probe-health',
      'publish-provisioned-event',
      'ready',
    ]);
    for (const key of ['Tenant', 'Workspace', 'Tier', 'ErpVersion'])
      expect(set.filter((fields) => key in fields)).toEqual([]);

    const status = await handle.query(statusQuery);
    const published = peers.published.get(name)!;
    expect(published.at(-1)).toEqual(status);
    // the quick steps are published with the step after them, not each on its own
    expect(published.length).toBeLessThanOrEqual(10);

    const { typedSearchAttributes } = await handle.describe();
    expect(typedSearchAttributes.get(searchAttributes.currentStep)).toBe('ready');

    // the epoch: no patch markers and no TemporalChangeVersion upserts until a change is versioned
    const patchMarkers = (history.events ?? []).filter(
      (event) => event.markerRecordedEventAttributes?.markerName === 'core_patch',
    );
    expect(patchMarkers).toEqual([]);
    expect(set.filter((fields) => 'TemporalChangeVersion' in fields)).toEqual([]);

    if (process.env.RECORD_HISTORIES) {
      const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');
      const file = path.join(fixtures, 'tenant-lifecycle.json');
      writeFileSync(file, JSON.stringify(history, null, 2) + '\n');
    }
  });

  it('the published status names the step the workflow waits at: ready after a reconcile of a Ready tenant and its probes, soak-period once cancelled', async () => {
    const { name, handle, spec } = await start({ readyProbeIntervalMs: 200 });
    const lastPublished = () => peers.published.get(name)?.at(-1);
    await expect.poll(() => lastPublished()?.currentStep, { timeout: 30_000 }).toBe('ready');

    // a new generation of a Ready tenant: reconciled, probed, Ready again (its event went out before)
    await handle.signal(applySignal, { uid: `uid-${name}`, generation: 2, spec });
    await expect.poll(() => handle.query(statusQuery).then((s) => s.observedGeneration), { timeout: 30_000 }).toBe(2);
    // a few probes while Ready: each healthy, nothing changes
    const probes = peers.calls.get('probeTenantHealth') ?? 0;
    await expect.poll(() => peers.calls.get('probeTenantHealth') ?? 0, { timeout: 10_000 }).toBeGreaterThan(probes + 2);
    const status = await handle.query(statusQuery);
    expect(status.currentStep).toBe('ready');
    expect(lastPublished()).toEqual(status);

    await handle.executeUpdate(cancelUpdate);
    await expect.poll(() => lastPublished()?.currentStep, { timeout: 10_000 }).toBe('soak-period');
    expect(lastPublished()).toEqual(await handle.query(statusQuery));
    await handle.terminate('test over');
  });
});
