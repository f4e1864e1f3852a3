/**
 * What the TenantClient controller writes to a TenantClient's status subresource: the lifecycle
 * workflow's conditions, phase and per-resource states (what it published), with the generation it
 * has reconciled as observedGeneration, a refusal of the controller (a rule the schema cannot say) as
 * Synced=False, and Ready=False reason Deleting while the finalizer waits for deprovisioning.
 * Pure, so it is checked without a cluster.
 */
import type { KubeTenantStatus } from '../../domain/tenants/tenant-client-api.js';
import {
  resourceKinds,
  setCondition,
  type Condition,
  type ResourceKind,
  type ResourceState,
  type StepRecord,
  type TenantStatus,
} from '../../domain/tenants/types.js';

export type { KubeTenantStatus };

/** What the controller knows of a TenantClient beyond the object and the workflow's published status. */
export interface AppliedGeneration {
  /** The Kubernetes object (uid) and generation this is about. */
  uid: string;
  generation: number;
  /** Why the spec was not applied (Synced=False). */
  refusal?: string;
  /** The trace of the reconcile that applied it, when tracing recorded one. */
  traceId?: string;
}

export interface StatusInput {
  generation: number;
  deleting: boolean;
  previous: KubeTenantStatus | undefined;
  /** What the tenant's workflow published, when it is this object's tenant. */
  published: TenantStatus | undefined;
  applied: AppliedGeneration | undefined;
  workflowId: string;
  temporalUiUrl: string;
  /** The link to a trace in the trace store's UI. */
  traceLink: (traceId: string) => string;
  now: string;
}

export function desiredStatus(input: StatusInput): KubeTenantStatus {
  const { previous, applied, now } = input;
  const seen = input.published;
  const caughtUp =
    applied?.refusal !== undefined || (seen !== undefined && seen.observedGeneration >= input.generation);
  const observedGeneration = caughtUp ? input.generation : (previous?.observedGeneration ?? 0);

  let conditions: Condition[] = (previous?.conditions ?? []).filter((c) => c.type === 'Synced' || c.type === 'Ready');
  for (const c of seen?.conditions ?? [])
    conditions = setCondition(conditions, { ...c, observedGeneration }, c.lastTransitionTime);
  if (!seen) {
    // the controller's part succeeded (a ReconcileError of an earlier try no longer holds)
    if (applied && applied.refusal === undefined)
      conditions = setCondition(
        conditions,
        { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: 'applied', observedGeneration },
        now,
      );
    conditions = setCondition(
      conditions,
      {
        type: 'Ready',
        status: 'False',
        reason: 'Creating',
        message: 'waiting for the tenant workflow',
        observedGeneration,
      },
      now,
    );
  }
  if (applied?.refusal !== undefined) {
    conditions = setCondition(
      conditions,
      { type: 'Synced', status: 'False', reason: 'ReconcileError', message: applied.refusal, observedGeneration },
      now,
    );
  }
  if (input.deleting && seen?.phase !== 'Deprovisioned') {
    const when =
      seen?.phase === 'Deprovisioning'
        ? 'deprovisioning now'
        : seen?.deprovisionAt
          ? `deprovisioning at ${seen.deprovisionAt} (the soak period)`
          : 'cancelling the tenant';
    conditions = setCondition(
      conditions,
      {
        type: 'Ready',
        status: 'False',
        reason: 'Deleting',
        message: `${when}; the finalizer is removed once it is deprovisioned`,
        observedGeneration,
      },
      now,
    );
  }

  return dropUndefined({
    observedGeneration,
    phase: seen?.phase,
    conditions,
    resources: seen ? pickResources(seen.resources) : undefined,
    // the controller's own (reconciler.ts), kept until it writes them again
    objects: previous?.objects,
    currentStep: seen?.currentStep,
    workflowId: input.workflowId,
    temporalUiUrl: input.temporalUiUrl,
    ...traceOf(applied, previous, input.traceLink),
    readyAt: seen?.readyAt,
    cancelledAt: seen?.cancelledAt,
    deprovisionAt: seen?.deprovisionAt,
    deprovisionedAt: seen?.deprovisionedAt,
    lastEventStepAt: previous?.lastEventStepAt,
  });
}

/** The trace of the newest apply: the one this controller recorded, else the one the status names. */
function traceOf(
  applied: AppliedGeneration | undefined,
  previous: KubeTenantStatus | undefined,
  link: (traceId: string) => string,
): Pick<KubeTenantStatus, 'traceId' | 'traceUrl'> {
  if (applied?.traceId) return { traceId: applied.traceId, traceUrl: link(applied.traceId) };
  return { traceId: previous?.traceId, traceUrl: previous?.traceUrl };
}

/**
 * The status of an object whose reconcile failed: Synced=False reason ReconcileError with what
 * failed (Ready=False reason Creating if it had no Ready yet); the rest as it was.
 */
export function failedStatus(
  previous: KubeTenantStatus | undefined,
  generation: number,
  message: string,
  now: string,
): KubeTenantStatus {
  const observedGeneration = previous?.observedGeneration ?? 0;
  let conditions = setCondition(
    previous?.conditions ?? [],
    { type: 'Synced', status: 'False', reason: 'ReconcileError', message, observedGeneration },
    now,
  );
  if (!conditions.some((c) => c.type === 'Ready'))
    conditions = setCondition(
      conditions,
      {
        type: 'Ready',
        status: 'False',
        reason: 'Creating',
        message: `generation ${generation} not reconciled yet`,
        observedGeneration,
      },
      now,
    );
  return { ...previous, observedGeneration, conditions };
}

/** The workflow's steps not yet published as Events (after `lastEventStepAt`), oldest first. */
export function unpublishedSteps(steps: StepRecord[], lastEventStepAt: string | undefined): StepRecord[] {
  return steps.filter((s) => !lastEventStepAt || s.at > lastEventStepAt).sort((a, b) => a.at.localeCompare(b.at));
}

function pickResources(resources: Partial<Record<ResourceKind, ResourceState>>) {
  const picked: Partial<Record<ResourceKind, ResourceState>> = {};
  for (const k of resourceKinds) if (resources[k]) picked[k] = resources[k];
  return picked;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** True when writing `next` would change what the object's status says. */
export function statusChanged(current: KubeTenantStatus | undefined, next: KubeTenantStatus): boolean {
  return stableJson(current ?? {}) !== stableJson(next);
}

function stableJson(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
      : value,
  );
}
