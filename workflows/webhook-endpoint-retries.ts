/**
 * The retries of one endpoint's failed deliveries (`webhook-endpoint-retries-<endpointId>`): one
 * run per failing endpoint, however many messages wait. The schedule of the waiting messages is in
 * PostgreSQL (webhook_deliveries.next_attempt_at, written with each attempt); this workflow holds
 * one durable timer, for the earliest due, and delivers what is due in batches from an activity
 * that keeps to the endpoint's concurrency (a receiver back after an outage gets no storm). The
 * dispatcher (and its sweeper, and a replay) tell it of new due times with a signal-with-start; a
 * first attempt answered 410 Gone is told the same way, and the run disables the endpoint. It ends
 * once nothing waits, or when the endpoint was disabled (410, failing for WEBHOOK_DISABLE_AFTER,
 * deleted); it continues as new when its history grows.
 */
import {
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  WEBHOOK_RETRY_DUE_SIGNAL,
  type WebhookEndpointRetriesInput,
  type WebhookEndpointRetriesResult,
  type WebhookRetryDue,
} from '../domain/webhooks/workflow-contract.js';

const { deliverDueWebhooks, disableGoneWebhookEndpoint } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  // a worker killed mid-batch: another one takes the batch over within this (what it had recorded stays done)
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export const retryDueSignal = defineSignal<[WebhookRetryDue]>(WEBHOOK_RETRY_DUE_SIGNAL);

/** Continue as new past this many history events (the run's state is one due time). */
const HISTORY_MAX = 2_000;

export async function webhookEndpointRetries(
  input: WebhookEndpointRetriesInput,
): Promise<WebhookEndpointRetriesResult> {
  const { endpointId } = input;
  let wakeAt = input.dueAt;
  let goneMessageId: string | undefined;
  setHandler(retryDueSignal, (due) => {
    wakeAt = wakeAt === undefined ? due.dueAt : Math.min(wakeAt, due.dueAt);
    goneMessageId ??= due.goneMessageId;
  });
  const totals = { attempts: 0, delivered: 0, failed: 0 };
  for (;;) {
    // the one timer: until the earliest due time; an earlier one or a 410 signalled meanwhile cuts it short
    while (goneMessageId === undefined && (wakeAt === undefined || wakeAt > Date.now())) {
      const until = wakeAt;
      if (until === undefined) await condition(() => wakeAt !== undefined || goneMessageId !== undefined);
      else await condition(() => wakeAt !== until || goneMessageId !== undefined, until - Date.now());
    }
    if (goneMessageId !== undefined) {
      totals.failed += await disableGoneWebhookEndpoint.executeWithOptions(
        { summary: `410 Gone to ${goneMessageId}: endpoint disabled, admins told` },
        [{ endpointId, messageId: goneMessageId }],
      );
      return { status: 'endpoint-disabled', ...totals };
    }
    wakeAt = undefined;
    const r = await deliverDueWebhooks.executeWithOptions(
      { summary: `POST the due messages of endpoint ${endpointId}` },
      [{ endpointId }],
    );
    totals.attempts += r.attempts;
    totals.delivered += r.delivered;
    totals.failed += r.failed;
    if (r.endpointDisabled) return { status: 'endpoint-disabled', ...totals };
    if (r.nextDueAt !== null) wakeAt = wakeAt === undefined ? r.nextDueAt : Math.min(wakeAt, r.nextDueAt);
    if (wakeAt === undefined) return { status: 'drained', ...totals };
    // a 410 signalled during the batch is handled by this run (the new run's input carries no message)
    const info = workflowInfo();
    if (goneMessageId === undefined && (info.continueAsNewSuggested || info.historyLength > HISTORY_MAX))
      await continueAsNew<typeof webhookEndpointRetries>({ endpointId, dueAt: wakeAt });
  }
}
