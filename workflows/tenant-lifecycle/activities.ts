/**
 * The lifecycle's activities, one proxy per retry policy (as in Temporal's saga sample), so a
 * call's policy is the proxy it goes through and never a merge of option objects:
 *
 * - `reconcileStep`: a few quick attempts; a failure is then recorded on its resource (Synced=False,
 *   ReconcileError with the cause) and the next reconcile tries again.
 * - `mustFinish`: retried without limit, with a capped interval: steps that have to happen however
 *   long a peer is away (the `client.provisioned` event, every deprovisioning step). Only a
 *   non-retryable `ApplicationFailure` (a business reason) ever reaches the workflow. The worker
 *   heartbeats for them as for the quick steps.
 * - `install`: the from-scratch install of a tenant database (long; heartbeats, so a worker killed
 *   mid-install has it retried on another).
 * - `nonFatal`: the chat room; a failure is recorded on the room, provisioning goes on.
 * - `quickStep` / `quickNonFatal`: the reconcile steps that are one or two calls to a peer (the
 *   subdomain's reservation, the route, the filestore folder, the backup schedule, the chat room),
 *   with the policies of `reconcileStep` / `nonFatal`, as local activities: they run inside the
 *   workflow task that reaches them, so a reconcile takes a few workflow tasks, not one per step.
 *   A worker that dies during one loses its workflow task, which times out and is replayed on another
 *   worker (the step runs again: every step is idempotent).
 * - `recordTenantStatus`: the published status, a local activity retried until PostgreSQL answers.
 */
import {
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { TENANT_INSTALL_TIMEOUT_MINUTES, type LifecycleSettings } from '../../domain/tenants/workflow-contract.js';
import { retryIntervals } from '../shared/retry-intervals.js';

export function lifecycleActivities(settings: LifecycleSettings) {
  const intervals = (initial: string, maximum: string) => retryIntervals(settings.retryIntervals, initial, maximum);
  // the worker heartbeats for these steps while they run (worker/activity-heartbeats.ts), so a step
  // on a worker that died is retried after 10 s, not after its start-to-close timeout
  const reconcileStep: ActivityOptions = {
    startToCloseTimeout: '30 seconds',
    heartbeatTimeout: '10 seconds',
    retry: { ...intervals('500 milliseconds', '10 seconds'), backoffCoefficient: 2, maximumAttempts: 4 },
  };
  const mustFinish: ActivityOptions = {
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '10 seconds',
    // no maximumAttempts: retried until it succeeds or fails for a business reason
    retry: { ...intervals('1 second', '1 minute'), backoffCoefficient: 2 },
  };
  // the from-scratch install of a tenant database (minutes on real Odoo): alive while it heartbeats,
  // so a dead worker's attempt is retried on another after the heartbeat timeout; a stuck one ends
  // at the start-to-close timeout (TENANT_INSTALL_TIMEOUT_MINUTES)
  const install: ActivityOptions = {
    startToCloseTimeout: `${TENANT_INSTALL_TIMEOUT_MINUTES} minutes`,
    heartbeatTimeout: '30 seconds',
    retry: { ...intervals('1 second', '30 seconds'), backoffCoefficient: 2, maximumAttempts: 3 },
  };
  const nonFatal: ActivityOptions = {
    startToCloseTimeout: '30 seconds',
    heartbeatTimeout: '10 seconds',
    retry: { ...intervals('500 milliseconds', '10 seconds'), backoffCoefficient: 2, maximumAttempts: 3 },
  };

  const quickRetry = (step: ActivityOptions): LocalActivityOptions => ({
    startToCloseTimeout: step.startToCloseTimeout,
    retry: step.retry,
  });

  return {
    reconcileStep: proxyActivities<Activities>(reconcileStep),
    quickStep: proxyLocalActivities<Activities>(quickRetry(reconcileStep)),
    quickNonFatal: proxyLocalActivities<Activities>(quickRetry(nonFatal)),
    mustFinish: proxyActivities<Activities>(mustFinish),
    install: proxyActivities<Activities>(install),
    nonFatal: proxyActivities<Activities>(nonFatal),
    // (a proxy has no own properties to spread: take the one function by name)
    recordTenantStatus: proxyLocalActivities<Activities>({
      startToCloseTimeout: '10 seconds',
      retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
    }).recordTenantStatus,
  };
}

export type LifecycleActivities = ReturnType<typeof lifecycleActivities>;
