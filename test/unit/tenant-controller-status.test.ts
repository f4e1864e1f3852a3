/** What the TenantClient controller writes to a TenantClient's status (services/tenant-controller/status.ts). */
import { describe, expect, it } from 'vitest';
import {
  desiredStatus,
  failedStatus,
  statusChanged,
  unpublishedSteps,
  type StatusInput,
} from '../../services/tenant-controller/status.js';
import { newResources, type TenantStatus } from '../../domain/tenants/types.js';

const at = '2026-11-26T10:00:00.000Z';
const workflowStatus = (over: Partial<TenantStatus> = {}): TenantStatus => ({
  name: 'acme',
  generation: 1,
  observedGeneration: 1,
  phase: 'Ready',
  conditions: [
    {
      type: 'Synced',
      status: 'True',
      reason: 'ReconcileSuccess',
      message: '',
      lastTransitionTime: at,
      observedGeneration: 1,
    },
    { type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: at, observedGeneration: 1 },
  ],
  resources: newResources(at),
  steps: [],
  currentStep: 'ready',
  ...over,
});
const input = (over: Partial<StatusInput> = {}): StatusInput => ({
  generation: 3,
  deleting: false,
  previous: undefined,
  published: workflowStatus({ generation: 3, observedGeneration: 3 }),
  applied: { uid: 'u', generation: 3 },
  workflowId: 'tenant:acme',
  temporalUiUrl: 'http://ui/tenant%3Aacme',
  traceLink: (traceId: string) => `http://traces/${traceId}`,
  now: '2026-11-26T11:00:00.000Z',
  ...over,
});

describe('the status the controller writes', () => {
  it('reports the generation the workflow has reconciled', () => {
    const s = desiredStatus(input());
    expect(s.observedGeneration).toBe(3);
    expect(s.conditions?.map((c) => [c.type, c.status, c.observedGeneration])).toEqual([
      ['Synced', 'True', 3],
      ['Ready', 'True', 3],
    ]);
  });

  it('keeps the previous observedGeneration while the workflow has not seen the new spec', () => {
    const s = desiredStatus(
      input({
        published: workflowStatus({ generation: 3, observedGeneration: 2 }),
        previous: { observedGeneration: 2 },
      }),
    );
    expect(s.observedGeneration).toBe(2);
  });

  it('shows a refused spec as Synced=False with the reason, observed at its generation', () => {
    const s = desiredStatus(input({ applied: { uid: 'u', generation: 3, refusal: 'spec.erpVersion cannot change' } }));
    expect(s.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ReconcileError',
      message: 'spec.erpVersion cannot change',
      observedGeneration: 3,
      lastTransitionTime: '2026-11-26T11:00:00.000Z',
    });
    expect(s.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('says Deleting with the deprovisioning time while the finalizer waits', () => {
    const published = workflowStatus({ phase: 'Cancelled', deprovisionAt: '2026-12-26T10:00:00.000Z' });
    const s = desiredStatus(input({ deleting: true, published }));
    expect(s.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Deleting',
      message:
        'deprovisioning at 2026-12-26T10:00:00.000Z (the soak period); the finalizer is removed once it is deprovisioned',
    });
  });

  it('is unchanged when written again (no status write on every resync)', () => {
    const first = desiredStatus(input());
    expect(statusChanged(first, desiredStatus(input({ previous: first })))).toBe(false);
  });

  it("names the trace of the apply, and keeps naming it after the controller's restart", () => {
    const traceId = 'a'.repeat(32);
    const applied = desiredStatus(input({ applied: { uid: 'u', generation: 3, traceId } }));
    expect(applied).toMatchObject({ traceId, traceUrl: `http://traces/${traceId}` });
    const afterRestart = desiredStatus(input({ applied: undefined, previous: applied }));
    expect(afterRestart).toMatchObject({ traceId, traceUrl: `http://traces/${traceId}` });
  });

  it('publishes each workflow step once', () => {
    const steps = [
      { step: 'a', at: '2026-11-26T10:00:01.000Z', outcome: 'ok' as const, message: '' },
      { step: 'b', at: '2026-11-26T10:00:02.000Z', outcome: 'ok' as const, message: '' },
    ];
    expect(unpublishedSteps(steps, undefined).map((s) => s.step)).toEqual(['a', 'b']);
    expect(unpublishedSteps(steps, '2026-11-26T10:00:01.000Z').map((s) => s.step)).toEqual(['b']);
  });

  it('shows a failed reconcile as Synced=False ReconcileError, and a later success before any published status clears it', () => {
    const failed = failedStatus(undefined, 1, 'invalid input syntax for type json', '2026-11-26T11:00:00.000Z');
    expect(failed.conditions).toEqual([
      expect.objectContaining({
        type: 'Synced',
        status: 'False',
        reason: 'ReconcileError',
        message: 'invalid input syntax for type json',
      }),
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Creating' }),
    ]);
    const next = desiredStatus(
      input({
        generation: 1,
        previous: failed,
        published: undefined,
        applied: { uid: 'u', generation: 1 },
      }),
    );
    expect(next.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'True',
      reason: 'ReconcileSuccess',
    });
  });

  it('keeps the rest of the status when a reconcile fails', () => {
    const ready = desiredStatus(input());
    const failed = failedStatus(ready, 3, 'etcdserver: request timed out', '2026-11-26T12:00:00.000Z');
    expect(failed.phase).toBe('Ready');
    expect(failed.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Available' });
    expect(failed.conditions?.find((c) => c.type === 'Synced')).toMatchObject({ status: 'False' });
  });
});
