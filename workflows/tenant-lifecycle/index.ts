/**
 * The lifecycle of one TenantClient (workflow id `tenant:<name>`), like a controller's reconcile
 * loop: reconcile the composed resources until the tenant is Ready (reconcile.ts), then wait for
 * the next apply or operator action. Cancel starts the soak timer; when it ends (or on delete
 * after a cancel) the tenant is deprovisioned (deprovision.ts) and the workflow returns its final
 * status. A restore in place runs as its child (restore-in-place.ts), and nothing else touches the
 * tenant until it ends. Its state and the rules that change it are in state.ts, its message handlers in
 * message-handlers.ts, its activity policies in activities.ts.
 *
 * It never ends in failure because a peer was away: reconcile steps record their failures as
 * conditions and the loop backs off and tries again; must-finish steps retry without limit. Every
 * step is an idempotent activity, so a worker crash anywhere only repeats a step. Time comes from
 * the SDK's deterministic clock (`Date` inside the workflow sandbox).
 */
import { allHandlersFinished, condition, continueAsNew, log, workflowInfo } from '@temporalio/workflow';
import { type TenantLifecycleInput } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { type TenantStatus } from '../../domain/tenants/types.js';
import { lifecycleActivities, type LifecycleActivities } from './activities.js';
import { deprovision } from './deprovision.js';
import { failureMessage } from '../shared/activity-failures.js';
import { reconcile, type ReconcileOutcome } from './reconcile.js';
import { setRestoreInPlaceHandler } from './restore-in-place.js';
import { setMessageHandlers } from './message-handlers.js';
import { TenantState } from './state.js';
import { inTrace } from './reconcile-trace.js';

/** Continue as new past this many history events, unless the settings say otherwise. */
const HISTORY_LIMIT = 5_000;

/** How often a Ready tenant is probed, unless the settings say otherwise. */
const READY_PROBE_INTERVAL_MS = 60_000;

/**
 * One probe of a Ready tenant (no window: one attempt). A failure turns Ready=False (phase
 * Unavailable) with a message that names the database; the next success turns it Ready again.
 * Nothing is re-created: a vanished database is for an operator (restore), not for a re-clone.
 */
async function probeWhileReady(tenant: TenantState, activities: LifecycleActivities): Promise<void> {
  const state = tenant.state;
  const database = state.hostname;
  if (!database || tenant.isCancelled || state.restoringInPlace) return;
  const health = await activities.reconcileStep.probeTenantHealth
    .executeWithOptions(
      {
        startToCloseTimeout: '1 minute',
        heartbeatTimeout: '30 seconds',
        retry: { maximumAttempts: 2 },
        summary: `Probe ${database} while Ready`,
      },
      [{ host: database, tenant: state.name, database, windowMs: 0, intervalMs: 1_000 }],
    )
    .catch((err: unknown) => ({ healthy: false, detail: failureMessage(err) }));
  if (!health.healthy && tenant.isReady) {
    const message = `tenant database ${database} does not answer while Ready: ${health.detail}`;
    tenant.recordStep('probe-while-ready', 'failed', health.detail);
    tenant.setReady('False', 'Unavailable', message);
    state.phase = 'Unavailable';
  } else if (health.healthy && !tenant.isReady) {
    tenant.recordStep('probe-while-ready', 'ok', `recovered: ${health.detail}`);
    tenant.setReady('True', 'Available', '');
    state.phase = 'Ready';
  }
  await tenant.publish();
}

/**
 * The tenant's state: fresh on the first run, carried over a continue-as-new otherwise (then
 * reconciled again if what woke the last run was not reconciled before it continued).
 */
function startTenantState(input: TenantLifecycleInput, activities: LifecycleActivities): TenantState {
  const tenant = new TenantState(input.carried ?? TenantState.initial(input), (status, spec) =>
    activities.recordTenantStatus({ name: input.name, uid: input.uid, spec, status }),
  );
  const state = tenant.state;
  tenant.reconcileTrace = input.carriedTrace ?? {};
  // a first run reconciles; a continued one if what woke the last run (a newer spec, a chat-room
  // retry) was not reconciled before it continued as new
  if (!input.carried || state.chatRetry || state.observedGeneration < state.generation) tenant.needsReconcile = true;
  return tenant;
}

/**
 * A cancelled tenant: wait out the soak period (a delete ends it early), then deprovision. Returns
 * true once deprovisioned, false if the tenant was reactivated meanwhile.
 */
async function soakThenDeprovision(tenant: TenantState, activities: LifecycleActivities): Promise<boolean> {
  const state = tenant.state;
  tenant.setCurrentStep('soak-period');
  await tenant.publish();
  const remaining = Date.parse(state.deprovisionAt!) - Date.now();
  if (remaining > 0) {
    await condition(() => !tenant.isCancelled || state.deleteRequested, remaining, {
      summary: `Soak period until ${state.deprovisionAt}`,
    });
  }
  if (!tenant.isCancelled) return false; // reactivated
  await untilRestoredInPlace(tenant);
  await deprovision(tenant, activities);
  await condition(allHandlersFinished);
  log.info('tenant deprovisioned', { tenant: state.name });
  return true;
}

/**
 * Between reconcile rounds: a tenant not Ready backs off (exponentially, never past its readiness
 * deadline); a Ready one is probed every interval; otherwise it waits for the next apply or action.
 */
async function waitForNextRound(
  tenant: TenantState,
  outcome: ReconcileOutcome,
  failedRounds: number,
  { settings }: TenantLifecycleInput,
  activities: LifecycleActivities,
): Promise<void> {
  const state = tenant.state;
  const wakeUp = () => tenant.needsReconcile || tenant.isCancelled || tenant.hasUnpublishedChanges;
  // the step it waits at (after a failed round: the one that failed, or waiting-to-retry), published
  if (outcome !== 'not-ready') tenant.setCurrentStep(outcome);
  tenant.showCurrentStep();
  await tenant.publish();
  if (outcome === 'not-ready') {
    // exponential back-off, but never past the readiness deadline, so it is reported on time
    const backoff = Math.min(
      settings.probeIntervalMs * 2 ** Math.min(failedRounds - 1, 16),
      settings.reconcileBackoffMaxMs,
    );
    const untilDeadline = state.deadlineAt - Date.now();
    const wait = untilDeadline > 0 ? Math.min(backoff, untilDeadline) : backoff;
    await condition(wakeUp, Math.max(wait, 1), {
      summary: `Back off ${Math.round(wait / 1000)}s before reconciling ${state.name} again`,
    });
  } else if (outcome === 'ready') {
    // probed, so a Ready tenant whose database vanishes or breaks is noticed
    const interval = settings.readyProbeIntervalMs ?? READY_PROBE_INTERVAL_MS;
    const woken = await condition(() => wakeUp() || workflowInfo().continueAsNewSuggested, interval, {
      summary: `Probe ${state.name} again in ${Math.round(interval / 1000)}s`,
    });
    if (!woken) await probeWhileReady(tenant, activities);
  } else {
    await condition(() => wakeUp() || workflowInfo().continueAsNewSuggested);
  }
}

/** While a restore in place runs: nothing else touches the tenant; what changes meanwhile is published. */
async function untilRestoredInPlace(tenant: TenantState): Promise<void> {
  const state = tenant.state;
  while (state.restoringInPlace) {
    tenant.setCurrentStep('restore-in-place');
    await tenant.publish();
    await condition(() => !state.restoringInPlace || tenant.hasUnpublishedChanges);
  }
}

/** Continues as new (carrying the state) once the history is long, and no child runs; returns otherwise. */
async function continueAsNewIfHistoryIsLong(tenant: TenantState, input: TenantLifecycleInput): Promise<void> {
  const state = tenant.state;
  if (
    state.restoringInPlace ||
    (!workflowInfo().continueAsNewSuggested &&
      workflowInfo().historyLength <= (input.settings.historyLimit ?? HISTORY_LIMIT))
  )
    return;
  await tenant.publish();
  await condition(allHandlersFinished);
  tenant.recordStep(
    'continue-as-new',
    'ok',
    `history of run ${workflowInfo().runId} has ${workflowInfo().historyLength} events`,
  );
  await continueAsNew<typeof tenantLifecycle>({
    ...input,
    generation: state.generation,
    spec: state.spec,
    carried: state,
    carriedTrace: tenant.reconcileTrace,
  });
}

/** Provisions, keeps and finally deprovisions one tenant. Returns the final status. */
export async function tenantLifecycle(input: TenantLifecycleInput): Promise<TenantStatus> {
  const { settings } = input;
  const activities = lifecycleActivities(settings);
  const tenant = startTenantState(input, activities);
  const state = tenant.state;

  setMessageHandlers(tenant, input);
  setRestoreInPlaceHandler(tenant);

  tenant.setSearchAttributes([
    { key: searchAttributes.tenant, value: state.name },
    { key: searchAttributes.workspace, value: state.name },
  ]);
  let outcome: ReconcileOutcome = state.phase === 'Ready' ? 'ready' : 'not-ready';
  let failedRounds = 0;
  for (;;) {
    if (tenant.isCancelled) {
      if (await soakThenDeprovision(tenant, activities)) return tenant.status();
      continue; // reactivated
    }

    await untilRestoredInPlace(tenant);
    if (tenant.needsReconcile || outcome === 'not-ready') {
      tenant.needsReconcile = false;
      outcome = await inTrace(tenant.reconcileTrace, `reconcile ${state.name} generation ${state.generation}`, () =>
        reconcile(tenant, { uid: input.uid, settings, activities }),
      );
      failedRounds = outcome === 'ready' ? 0 : failedRounds + 1;
      // the story of that apply ends at Ready; later rounds (probes) are traces of their own
      if (outcome === 'ready') tenant.reconcileTrace = {};
    }
    await tenant.publish();
    if (tenant.isCancelled) continue;

    await waitForNextRound(tenant, outcome, failedRounds, input, activities);
    await continueAsNewIfHistoryIsLong(tenant, input);
  }
}
