/**
 * One reconcile of a tenant, in the order of its resources: reserve the subdomain, then the steps
 * of reconcile-steps.ts (clone the database, or install it from scratch when its template is missing, ensure the route, the ERP API user and the tier's ERP
 * modules, the filestore folder, the backup schedule and the (non-fatal) chat room), then probe
 * the tenant until it is healthy or the readiness deadline passes, and emit `client.provisioned`
 * once. Every step is idempotent; a step that fails is recorded on its resource and in the
 * conditions, never thrown out of the workflow.
 */
import type { LifecycleSettings } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import {
  routeNamespace,
  TenantErrorType,
  unreadyMessage,
  unreadyResources,
  type TenantClientSpec,
} from '../../domain/tenants/types.js';
import { failureMessage, failureType } from '../shared/activity-failures.js';
import type { LifecycleActivities } from './activities.js';
import { reconcileSteps, type ReconcileStepContext } from './reconcile-steps.js';
import { runResourceStep } from './resource-step.js';
import { nowIso, type TenantState } from './state.js';

/** Ready; not Ready yet (reconcile again after a back-off); or blocked until the spec changes. */
export type ReconcileOutcome = 'ready' | 'not-ready' | 'blocked';

export interface ReconcileContext {
  /** The TenantClient's uid (it owns the subdomain reservation). */
  uid: string;
  settings: LifecycleSettings;
  activities: LifecycleActivities;
}

/** The generation and spec this reconcile works towards (an apply meanwhile waits for the next one). */
interface Target {
  generation: number;
  spec: TenantClientSpec;
  name: string;
}

interface HealthResult {
  healthy: boolean;
  detail: string;
}

export async function reconcile(tenant: TenantState, context: ReconcileContext): Promise<ReconcileOutcome> {
  const { generation, spec, name } = tenant.state;
  const target: Target = { generation, spec, name };
  startReconcile(tenant, target);
  const refused = await reserveSubdomain(tenant, target, context);
  if (refused) return refused;

  const host = tenant.state.hostname;
  const steps: ReconcileStepContext = {
    tenant,
    activities: context.activities,
    name,
    spec,
    host,
    database: host,
    namespace: routeNamespace(spec.erpVersion),
    readyDeadlineMs: context.settings.readyDeadlineMs,
  };
  for (const step of reconcileSteps(tenant, steps)) {
    await runResourceStep(tenant, steps, step, (err) => {
      const message = failureMessage(err);
      tenant.recordStep(step.name, 'failed', message);
      tenant.setResourceFailed(step.resource, message);
    });
  }

  tenant.setSyncedFromResources(generation);
  const allInPlace = unreadyResources(tenant.state.resources).length === 0;
  if (!tenant.isReady)
    tenant.setReady(
      'False',
      'Creating',
      unreadyMessage(tenant.state.resources) || 'waiting for the tenant health probe',
    );

  const health = await probeReadiness(tenant, context, allInPlace);
  if (health.healthy && allInPlace) return becomeReady(tenant, target, context, health);
  return stayUnready(tenant, target, context, health);
}

/** The phase of a tenant not Ready yet (Unavailable past its deadline); the tier and version as search attributes. */
function startReconcile(tenant: TenantState, { spec }: Target): void {
  const state = tenant.state;
  if (state.phase !== 'Cancelled' && !tenant.isReady)
    state.phase = Date.now() >= state.deadlineAt ? 'Unavailable' : 'Provisioning';
  tenant.setSearchAttributes([
    { key: searchAttributes.tier, value: spec.tier },
    { key: searchAttributes.erpVersion, value: spec.erpVersion },
  ]);
}

/**
 * The subdomain: a unique constraint decides, not a check-then-insert. Sets the hostname; when it
 * cannot, answers how the reconcile ends: blocked (taken by another tenant) or not Ready yet.
 */
async function reserveSubdomain(
  tenant: TenantState,
  { generation, spec, name }: Target,
  { uid, activities }: ReconcileContext,
): Promise<ReconcileOutcome | undefined> {
  const state = tenant.state;
  tenant.setCurrentStep('reserve-subdomain', { quick: true });
  try {
    const reserved = await activities.quickStep.reserveSubdomain.executeWithOptions(
      { summary: `Reserve subdomain ${spec.subdomain}` },
      [{ name, uid, spec }],
    );
    state.hostname = reserved.hostname;
    tenant.recordStep(
      'reserve-subdomain',
      'ok',
      `subdomain ${spec.subdomain} ${reserved.reserved === 'new' ? 'reserved' : 'already reserved for this tenant'}`,
    );
    return undefined;
  } catch (err) {
    const message = failureMessage(err);
    const taken = failureType(err) === TenantErrorType.SubdomainTaken;
    tenant.recordStep('reserve-subdomain', 'failed', message);
    tenant.setSynced('False', message, generation);
    tenant.setReady('False', taken ? 'Unavailable' : 'Creating', message);
    if (taken) state.phase = 'Unavailable';
    await tenant.publish();
    return taken ? 'blocked' : 'not-ready';
  }
}

/**
 * Readiness: probes through the route until healthy, for up to the time left before the deadline
 * while every resource is in place (else once). A probe that could not run answers unhealthy.
 */
async function probeReadiness(
  tenant: TenantState,
  { settings, activities }: ReconcileContext,
  allInPlace: boolean,
): Promise<HealthResult> {
  const state = tenant.state;
  const host = state.hostname;
  const database = host;
  tenant.setCurrentStep('probe-health');
  await tenant.publish();
  const beforeDeadline = state.deadlineAt - Date.now();
  const windowMs = allInPlace && beforeDeadline > 0 ? beforeDeadline : 0;
  return activities.reconcileStep.probeTenantHealth
    .executeWithOptions(
      {
        startToCloseTimeout: windowMs + 60_000,
        heartbeatTimeout: '30 seconds',
        retry: { maximumAttempts: 3 },
        summary: `GET /web/health with Host ${host}, then authenticate on ${database}`,
      },
      [{ host, tenant: state.name, database, windowMs, intervalMs: settings.probeIntervalMs }],
    )
    .catch((err) => ({ healthy: false, httpStatus: 0, detail: failureMessage(err), attempts: 0 }));
}

/** Ready: the conditions say so, and `client.provisioned` goes out once per tenant. */
async function becomeReady(
  tenant: TenantState,
  { generation, spec, name }: Target,
  { activities }: ReconcileContext,
  health: HealthResult,
): Promise<ReconcileOutcome> {
  const state = tenant.state;
  tenant.recordStep('probe-health', 'ok', health.detail);
  state.observedGeneration = generation;
  state.readyAt ??= nowIso();
  if (state.phase !== 'Cancelled') state.phase = 'Ready';
  tenant.setReady('True', 'Available', '');
  // a tenant cancelled during this reconcile gets no event, hence no welcome e-mail; a
  // reactivation reconciles again and emits it then
  if (!state.provisionedEventId && !tenant.isCancelled) {
    tenant.setCurrentStep('publish-provisioned-event');
    await tenant.publish();
    // must finish: the event leads to the welcome e-mail and the portal entry, however long the
    // events service is away (the pending activity shows its attempts and last failure)
    const published = await activities.mustFinish.publishProvisionedEvent.executeWithOptions(
      { summary: `Emit client.provisioned for ${name}` },
      [{ tenant: name, generation, spec }],
    );
    state.provisionedEventId = published.eventId;
    tenant.recordStep(
      'publish-provisioned-event',
      'ok',
      `${published.eventId}${published.duplicate ? ' (already on the stream)' : ''}`,
    );
    tenant.touch();
  }
  tenant.setCurrentStep('ready');
  await tenant.publish();
  return 'ready';
}

/** Not Ready: still Creating before the deadline, Unavailable (saying what is missing) after it. */
async function stayUnready(
  tenant: TenantState,
  { generation }: Target,
  { settings }: ReconcileContext,
  health: HealthResult,
): Promise<ReconcileOutcome> {
  const state = tenant.state;
  tenant.recordStep('probe-health', 'failed', health.detail);
  state.observedGeneration = generation;
  if (Date.now() >= state.deadlineAt) {
    const waitedFor = Math.round(settings.readyDeadlineMs / 1000);
    const message = [
      `not Ready ${waitedFor}s after the apply`,
      health.detail,
      unreadyMessage(state.resources),
      ...tenant.blockingErrors(),
    ]
      .filter(Boolean)
      .join('; ');
    tenant.setReady('False', 'Unavailable', message);
    if (state.phase !== 'Cancelled') state.phase = 'Unavailable';
  } else {
    tenant.setReady('False', 'Creating', [unreadyMessage(state.resources), health.detail].filter(Boolean).join('; '));
  }
  tenant.setCurrentStep('waiting-to-retry');
  await tenant.publish();
  return 'not-ready';
}
