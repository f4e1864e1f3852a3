/**
 * The retries of one webhook delivery (message × endpoint), after its first attempt failed (the
 * dispatcher makes that one itself, off Temporal: services/webhooks/dispatcher.ts). Each wait is
 * a durable timer in the history, with a summary saying why; each attempt is an activity that
 * posts, records the attempt in PostgreSQL and answers its outcome.
 *
 * Wait before retry n: schedule[n] ± jitter (the workflow's deterministic random); a Retry-After
 * the receiver sent, clamped to [retryAfterMin, retryAfterMax], replaces it; after a 429 or a
 * timeout the wait is at least slowDownMin. 2xx ends it (delivered); 410 disables the endpoint and
 * ends it; an endpoint disabled meanwhile ends it; the schedule exhausted marks the message failed
 * and alerts the workspace admins.
 */
import { proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { retryDelay, type WebhookAttemptSummary } from '../domain/webhooks/retry-schedule.js';
import type { WebhookDeliveryInput, WebhookDeliveryResult } from '../domain/webhooks/workflow-contract.js';

export { retryDelay };

const activityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;
const { finishWebhookDelivery } = proxyActivities<Activities>(activityOptions);
/**
 * The attempt is a local activity: it runs in the worker inside the workflow task that the retry
 * timer wakes, and its result is a marker in the history, so a retry costs the server two workflow
 * tasks (start → timer; timer → attempt → done) and no activity task. An attempt is short (at most
 * WEBHOOK_TIMEOUT_MS); the SDK keeps a longer one's workflow task alive.
 */
const { attemptWebhookDelivery } = proxyLocalActivities<Activities>(activityOptions);

const describe = (a: WebhookAttemptSummary) => (a.statusCode !== null ? `HTTP ${a.statusCode}` : a.outcome);
const human = (ms: number) =>
  ms < 10_000 ? `${ms} ms` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min` : `${(ms / 3_600_000).toFixed(1)} h`;

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { endpointId, messageId, settings } = input;
  // its search attributes come with the start (domain/webhooks/delivery-retries.ts)
  let attempts = input.firstAttempt ? 1 : 0;
  let last = input.firstAttempt;
  if (last?.outcome === 'gone') {
    await finishWebhookDelivery.executeWithOptions({ summary: '410 Gone: endpoint disabled, admins told' }, [
      { endpointId, messageId, attempts, lastError: last.error ?? 'answered 410', alert: false, gone: true },
    ]);
    return { status: 'endpoint-disabled', attempts };
  }
  for (let n = 0; ; n++) {
    // the first wait was the start's delay (the dispatcher started this run with startDelay)
    if (last && !(n === 0 && input.firstDelayMs !== undefined)) {
      const delay = retryDelay(settings, n, last, Math.random);
      if (delay === undefined) break;
      await sleep(delay, {
        summary: `retry ${n + 1} of ${settings.scheduleMs.length} in ${human(delay)} (last: ${describe(last)})`,
      });
    }
    last = await attemptWebhookDelivery.executeWithOptions(
      { summary: `POST ${input.eventType} ${messageId} (attempt ${attempts + 1})` },
      [{ endpointId, messageId, trigger: input.trigger === 'replay' && attempts === 0 ? 'replay' : 'retry' }],
    );
    attempts++;
    if (last.outcome === 'ok') return { status: 'delivered', attempts };
    if (last.endpointDisabled || last.outcome === 'endpoint-disabled') {
      await finishWebhookDelivery.executeWithOptions({ summary: 'endpoint disabled: message failed' }, [
        { endpointId, messageId, attempts, lastError: last.error ?? describe(last), alert: false },
      ]);
      return { status: 'endpoint-disabled', attempts };
    }
  }
  await finishWebhookDelivery.executeWithOptions(
    { summary: `retries exhausted after ${attempts} attempts: failed, admins alerted` },
    [{ endpointId, messageId, attempts, lastError: last?.error ?? 'no attempt', alert: true }],
  );
  return { status: 'failed', attempts };
}
