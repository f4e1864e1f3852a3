/**
 * A workspace's dunning workflow as payment events drive it: the first failed payment of a run
 * starts `dunning:<workspace>:<n>`; a payment, or the subscription's end, settles it.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { searchAttributes } from '../workflow-search-attributes.js';
import type { BillingDeps, Db, Workspace } from './stripe-event-context.js';
import type { SubscriptionRow } from './subscriptions.js';
import {
  DUNNING_WORKFLOW,
  dunningSettledSignal,
  dunningWorkflowId,
  type DunningInput,
  type DunWorkspaceWorkflow,
} from './workflow-contract.js';

/** Starts the workspace's dunning run `opts.run` (already started counts as done); answers its workflow id. */
export async function startDunning(
  deps: BillingDeps,
  workspace: Workspace,
  opts: { run: number; input: DunningInput },
): Promise<string> {
  const workflowId = dunningWorkflowId(workspace.slug, opts.run);
  try {
    await deps.temporal.workflow.start<DunWorkspaceWorkflow>(DUNNING_WORKFLOW, {
      workflowId,
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [opts.input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Dunning #${opts.run} of workspace ${workspace.slug}: suspension after ${Math.round(opts.input.graceMs / 1000)} s unless paid`,
      staticDetails: `First failed invoice: ${opts.input.invoiceId}\nPast due since: ${opts.input.pastDueSince}`,
      typedSearchAttributes: [
        { key: searchAttributes.workspace, value: workspace.slug },
        { key: searchAttributes.currentStep, value: 'queued' },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return workflowId;
}

/** Ends the workspace's running dunning workflow, if any (payment came in, or the subscription ended). */
export async function clearDunning(
  deps: BillingDeps,
  db: Db,
  workspace: Workspace,
  sub: SubscriptionRow | undefined,
  reason: 'paid' | 'cancelled',
) {
  if (!sub || sub.dunning_count === 0) return;
  if (reason === 'cancelled')
    await db.query('UPDATE subscriptions SET past_due_since = NULL WHERE workspace_id = $1', [workspace.id]);
  try {
    await deps.temporal.workflow
      .getHandle(dunningWorkflowId(workspace.slug, sub.dunning_count))
      .signal(dunningSettledSignal, { reason });
  } catch (err) {
    // it ended already (settled before, or never started): nothing to tell it
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
