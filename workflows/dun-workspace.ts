/**
 * Dunning of one workspace (`dunning:<workspace>:<n>`, started by the first `invoice.payment_failed`
 * of a run of failed payments, domain/billing/dunning-runs.ts): tell the workspace's admins, give
 * them the grace period (a durable timer: BILLING_GRACE_PERIOD), then suspend the workspace (its
 * keys get 403 `workspace-suspended`) unless the payment came in meanwhile. `invoice.paid` lifts a
 * suspension itself, at once, and signals `settled` so this run ends.
 *
 * Why a workflow per run rather than a Temporal Schedule: the timer is one-shot, starts at a
 * failure, and is cancelled by a payment; a schedule is for work that recurs. The history reads
 * as the run's runbook: notified → grace → suspended → settled.
 */
import { condition, log, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  dunningSettledSignal,
  dunningStatusQuery,
  type DunningInput,
  type DunningOutcome,
  type DunningStatus,
} from '../domain/billing/workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

const { notifyWorkspaceAdmins, suspendWorkspace } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // the notifications service or PostgreSQL may be down for a while: keep trying for days
  scheduleToCloseTimeout: '7 days',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function dunWorkspace(input: DunningInput): Promise<DunningOutcome> {
  let settled: 'paid' | 'cancelled' | undefined;
  const status: DunningStatus = { step: 'notified', suspendAt: new Date(Date.now() + input.graceMs).toISOString() };
  setHandler(dunningSettledSignal, ({ reason }) => {
    settled ??= reason;
  });
  setHandler(dunningStatusQuery, () => status);
  const step = (s: DunningStatus['step']) => {
    status.step = s;
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: s }]);
  };

  await notifyWorkspaceAdmins.executeWithOptions(
    {
      startToCloseTimeout: '30 seconds',
      summary: `E-mail the admins of ${input.workspace}: payment failed, suspension at ${status.suspendAt}`,
    },
    [
      {
        workspaceId: input.workspaceId,
        workspace: input.workspace,
        kind: 'payment-failed',
        suspendAt: status.suspendAt,
        invoiceId: input.invoiceId,
      },
    ],
  );
  step('in-grace');
  if (await condition(() => settled !== undefined, input.graceMs)) {
    step('settled');
    return settled === 'paid' ? 'paid-within-grace' : 'cancelled';
  }

  const suspended = await suspendWorkspace.executeWithOptions(
    {
      startToCloseTimeout: '30 seconds',
      summary: `Suspend workspace ${input.workspace} (grace period over, still unpaid)`,
    },
    [{ workspaceId: input.workspaceId, run: input.run }],
  );
  if (!suspended) {
    // the payment (or the end of the subscription) was recorded just before the timer fired
    step('settled');
    return 'settled-before-suspension';
  }
  step('suspended');
  log.info('workspace suspended', { workspace: input.workspace });
  await notifyWorkspaceAdmins.executeWithOptions(
    { startToCloseTimeout: '30 seconds', summary: `E-mail the admins of ${input.workspace}: workspace suspended` },
    [
      {
        workspaceId: input.workspaceId,
        workspace: input.workspace,
        kind: 'suspended',
        suspendAt: status.suspendAt,
        invoiceId: input.invoiceId,
      },
    ],
  );
  await condition(() => settled !== undefined);
  step('settled');
  return settled === 'paid' ? 'paid-after-suspension' : 'cancelled';
}
