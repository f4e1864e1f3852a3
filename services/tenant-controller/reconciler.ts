/**
 * The reconcile of one TenantClient (services/tenant-controller/index.ts runs it from its work
 * queue): apply a new generation, bring the status subresource to what the workflow published, keep the
 * composed objects it owns, publish new steps as Events, and hold the deletion finalizer until the
 * tenant is deprovisioned. A reconcile that fails says so on its own object (Synced=False reason
 * ReconcileError, a Warning Event) and is retried by the queue with backoff; no other object waits.
 */
import { ApiException, type CoreV1Api, type CustomObjectsApi, type KubernetesObjectApi } from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/common';
import { AppError } from '../../lib/errors.js';
import { type Logger } from '../../lib/logger.js';
import { temporalUiLink } from '../../lib/temporal.js';
import { inSpan, recordedTraceId, traceUiLink } from '../../lib/tracing.js';
import { applyTenantClient, runTenantAction, type ApplyResult } from '../../domain/tenants/operator-actions.js';
import { problemsDetail, validateTenantClient } from '../../domain/tenants/tenant-client.js';
import { TENANT_CLIENT_FINALIZER } from '../../domain/tenants/tenant-client-crd.js';
import {
  tenantClientGvr,
  type ComposedObjectState,
  type TenantClientObject,
} from '../../domain/tenants/tenant-client-api.js';
import { erpApiCredentialVersions, type ErpApiCredentialVersion } from '../../domain/erp/api-user.js';
import { readTenantStatus } from '../../domain/tenants/tenant-records.js';
import type { OperationDeps } from '../../domain/tenants/operator-actions.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, type TenantStatus } from '../../domain/tenants/types.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { deleteKeptObjects, keepObject, plannedObjects, type KeptObjectKey } from './composed-objects.js';
import { TenantClientEvents } from './events.js';
import { patchMetadata, patchStatus } from './merge-patch.js';
import type { ComposedObjectCache } from './object-cache.js';
import {
  desiredStatus,
  failedStatus,
  statusChanged,
  unpublishedSteps,
  type AppliedGeneration,
  type KubeTenantStatus,
} from './status.js';

export type { TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
export const gvr = tenantClientGvr;

export class Reconciler {
  constructor(
    private readonly deps: OperationDeps,
    private readonly custom: CustomObjectsApi,
    private readonly core: CoreV1Api,
    private readonly objects: KubernetesObjectApi,
    private readonly applied: Map<string, AppliedGeneration>,
    private readonly log: Logger,
    identity: string,
    private readonly cache: ComposedObjectCache,
  ) {
    this.events = new TenantClientEvents(core, log, identity);
  }

  private readonly events: TenantClientEvents;

  /** Per object (uid): the newest workflow step this controller has published as an Event. */
  private readonly publishedUpTo = new Map<string, string>();

  /**
   * Applies what is new, then brings the object's status (and finalizer) up to date with its
   * workflow. A failure is recorded on the object (see recordFailure) and thrown for the queue's backoff.
   */
  async reconcile(obj: TenantClientObject): Promise<void> {
    const { name } = obj.metadata;
    try {
      await this.applyIfNew(obj);
      const [published, credentials] = await Promise.all([
        readTenantStatus(this.deps.pool, name),
        erpApiCredentialVersions(this.deps.pool, [name]),
      ]);
      // another object's tenant under this name (refused on apply) is not this object's status
      const status = published?.uid === obj.metadata.uid ? published.status : undefined;
      await this.sync(obj, status, credentials.get(name));
    } catch (err) {
      await this.recordFailure(obj, err);
      throw err;
    }
  }

  /**
   * Synced=False reason ReconcileError with what failed, and a Warning Event when that message is
   * new, so `kubectl get` and `kubectl describe` say why this object is stuck. Best effort: with the
   * API server away the queue's retry is all there is.
   */
  private async recordFailure(obj: TenantClientObject, err: unknown): Promise<void> {
    const message = failureMessage(err);
    this.log.warn({ tenant: obj.metadata.name, err: message }, 'reconcile failed; retrying with backoff');
    const next = failedStatus(obj.status, obj.metadata.generation, message, new Date().toISOString());
    if (!statusChanged(obj.status, next)) return;
    try {
      await patchStatus(this.custom, obj.metadata.name, next);
      await this.events.record(obj, 'Warning', 'ReconcileError', message);
    } catch (patchErr) {
      this.log.warn({ tenant: obj.metadata.name, err: failureMessage(patchErr) }, 'reconcile failure not recorded');
    }
  }

  private async applyIfNew(obj: TenantClientObject): Promise<void> {
    const { name, uid, generation } = obj.metadata;
    if (obj.metadata.deletionTimestamp) return;
    if (!obj.metadata.finalizers?.includes(TENANT_CLIENT_FINALIZER)) await this.addFinalizer(obj);
    const known = this.applied.get(name);
    if (known && known.uid === uid && known.generation === generation) return;
    const outcome = await this.applyTraced(obj);
    this.applied.set(name, { uid, generation, ...outcome });
    if (outcome.refusal !== undefined)
      await this.events.record(
        obj,
        'Warning',
        'ApplyRefused',
        `generation ${generation} not applied: ${outcome.refusal}`,
      );
    else
      await this.events.record(
        obj,
        'Normal',
        'Applied',
        `generation ${generation} ${outcome.result} (workflow ${tenantWorkflowId(name)}, ${this.uiLink(name)}${
          outcome.traceId ? `; trace ${traceUiLink(this.deps.config, outcome.traceId)}` : ''
        })`,
      );
  }

  /**
   * The apply of a new generation in a span of its own: the root of the trace that the lifecycle
   * workflow's reconcile joins (the signal carries it), up to Ready; its id goes to the status.
   */
  private applyTraced(obj: TenantClientObject): Promise<{ result?: ApplyResult; refusal?: string; traceId?: string }> {
    const { name, generation } = obj.metadata;
    const attributes = {
      'plana.tenant': name,
      'plana.generation': generation,
      temporalWorkflowId: tenantWorkflowId(name),
    };
    return inSpan(`reconcile TenantClient ${name}`, attributes, async (span) => {
      const outcome = await this.apply(obj);
      if (outcome.refusal !== undefined) span.setAttribute('plana.refusal', outcome.refusal);
      return { ...outcome, traceId: recordedTraceId(span) };
    });
  }

  private async apply(obj: TenantClientObject): Promise<{ result?: ApplyResult; refusal?: string }> {
    const doc = {
      apiVersion: TENANT_CLIENT_API_VERSION,
      kind: TENANT_CLIENT_KIND,
      metadata: { name: obj.metadata.name },
      spec: obj.spec,
    };
    const valid = validateTenantClient(doc);
    if (!valid.ok) return { refusal: problemsDetail(valid.problems) };
    try {
      const { uid, generation } = obj.metadata;
      const { result } = await applyTenantClient(this.deps, {
        name: obj.metadata.name,
        uid,
        generation,
        spec: valid.value.spec,
      });
      return { result };
    } catch (err) {
      if (err instanceof AppError && err.code === 'CONFLICT') return { refusal: err.message };
      throw err;
    }
  }

  private async sync(
    obj: TenantClientObject,
    published: TenantStatus | undefined,
    credentials: ErpApiCredentialVersion | undefined,
  ): Promise<void> {
    const { name } = obj.metadata;
    const deleting = Boolean(obj.metadata.deletionTimestamp);
    if (deleting && !obj.metadata.finalizers?.includes(TENANT_CLIENT_FINALIZER)) return;
    const applied = this.applied.get(name);
    if (deleting) {
      const done = await this.advanceDeletion(obj, published);
      if (done) return;
    }
    const next = desiredStatus({
      generation: obj.metadata.generation,
      deleting,
      previous: obj.status,
      published,
      applied: applied?.uid === obj.metadata.uid ? applied : undefined,
      workflowId: tenantWorkflowId(name),
      temporalUiUrl: this.uiLink(name),
      traceLink: (traceId) => traceUiLink(this.deps.config, traceId),
      now: new Date().toISOString(),
    });
    if (!deleting && published)
      next.objects = { ...next.objects, ...(await this.keepObjects(obj, published, credentials)) };
    await this.publishSteps(obj, published, next);
    if (!statusChanged(obj.status, next)) return;
    await patchStatus(this.custom, name, next);
  }

  /**
   * New workflow steps as Events, each once: after the newest already published, as the object's
   * status says or, when the cached object has not yet seen that status write, as this controller
   * remembers (a pass over a stale cache would otherwise publish them all again).
   */
  private async publishSteps(obj: TenantClientObject, published: TenantStatus | undefined, next: KubeTenantStatus) {
    const { uid } = obj.metadata;
    const watermark = [obj.status?.lastEventStepAt, this.publishedUpTo.get(uid)]
      .filter((at): at is string => at !== undefined)
      .sort()
      .at(-1);
    for (const step of unpublishedSteps(published?.steps ?? [], watermark)) {
      // one not recorded (the API server away) and the ones after it wait for the next pass
      if (!(await this.events.step(obj, step, this.uiLink(obj.metadata.name)))) break;
      this.publishedUpTo.set(uid, step.at);
    }
    const publishedUpTo = this.publishedUpTo.get(uid) ?? watermark;
    if (publishedUpTo) next.lastEventStepAt = publishedUpTo;
  }

  /** The route, backup schedule and API user's Secret (composed-objects.ts); one deleted is made again. */
  private async keepObjects(
    obj: TenantClientObject,
    published: TenantStatus,
    credentials: ErpApiCredentialVersion | undefined,
  ): Promise<Partial<Record<KeptObjectKey, ComposedObjectState>>> {
    const kept: Partial<Record<KeptObjectKey, ComposedObjectState>> = {};
    for (const plan of plannedObjects(this.deps, obj, published, credentials)) {
      const { key, state, recreated } = await keepObject(
        this.objects,
        this.cache,
        obj.status?.objects?.[plan.key],
        plan,
      );
      kept[key] = state;
      if (state.synced === 'False')
        this.log.warn({ tenant: obj.metadata.name, object: key, err: state.message }, 'composed object not kept');
      if (recreated)
        await this.events.record(
          obj,
          'Normal',
          'ObjectRecreated',
          `${state.kind} ${state.namespace}/${state.name} was deleted: made again`,
        );
    }
    return kept;
  }

  /**
   * A TenantClient being deleted: tell its workflow, which cancels the tenant for good (the soak
   * period runs, no reactivation), and once the workflow reports it deprovisioned, or no workflow
   * was ever started for this object, remove the finalizer. True when the finalizer was removed.
   */
  private async advanceDeletion(obj: TenantClientObject, published: TenantStatus | undefined): Promise<boolean> {
    const { name } = obj.metadata;
    const neverCreated = !published && !(await this.workflowStartedFor(obj));
    if (neverCreated || published?.phase === 'Deprovisioned') {
      await deleteKeptObjects(this.objects, obj).catch((err: Error) =>
        this.log.warn({ err: err.message, tenant: name }, 'composed objects not deleted'),
      );
      await this.removeFinalizer(obj);
      await this.events.record(
        obj,
        'Normal',
        'FinalizerRemoved',
        neverCreated ? 'nothing was created for it' : `deprovisioned at ${published?.deprovisionedAt ?? 'now'}`,
      );
      return true;
    }
    if (!published?.tenantClientDeletedAt && !['Deprovisioning', 'Deprovisioned'].includes(published?.phase ?? '')) {
      try {
        const status = await runTenantAction(this.deps, name, 'tenantclient-deleted');
        await this.events.record(
          obj,
          'Normal',
          'Deleting',
          `cancelled for good: deprovisioning at ${status.deprovisionAt} (workflow ${tenantWorkflowId(name)}, ${this.uiLink(name)})`,
        );
      } catch (err) {
        // told already (what it published trails), or tearing down: its status says so on the next reconcile
        if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
      }
    }
    return false;
  }

  /** True when the tenant's workflow runs for this object (an apply started it; it has not published yet). */
  private async workflowStartedFor(obj: TenantClientObject): Promise<boolean> {
    try {
      const described = await this.deps.temporal.workflow.getHandle(tenantWorkflowId(obj.metadata.name)).describe();
      return described.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  private async addFinalizer(obj: TenantClientObject) {
    const finalizers = [...(obj.metadata.finalizers ?? []), TENANT_CLIENT_FINALIZER];
    await patchMetadata(this.custom, obj, { finalizers });
  }

  private async removeFinalizer(obj: TenantClientObject) {
    const finalizers = (obj.metadata.finalizers ?? []).filter((f) => f !== TENANT_CLIENT_FINALIZER);
    await patchMetadata(this.custom, obj, { finalizers });
    this.applied.delete(obj.metadata.name);
    this.publishedUpTo.delete(obj.metadata.uid);
  }

  private uiLink(name: string) {
    return temporalUiLink(this.deps.config, tenantWorkflowId(name));
  }
}

/** What failed, for a condition and an Event: the API server's answer or the error's message, bounded. */
export function failureMessage(err: unknown): string {
  const text =
    err instanceof ApiException
      ? `${err.code} ${typeof err.body === 'string' ? err.body : JSON.stringify(err.body)}`
      : err instanceof Error
        ? err.message
        : String(err);
  return text.slice(0, 512);
}
