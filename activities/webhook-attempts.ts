/**
 * One delivery at a time (the per-message workflow, workflows/webhook-delivery.ts, kept for replays
 * and manual retries): one attempt (post, record, disable on 410 or after failing too long), and the
 * end of a failed delivery (mark failed, alert the workspace admins).
 */
import { sendingEndpoints } from '../domain/webhooks/endpoints.js';
import { messagePayload, recordAttempts, setDeliveryStatus, type Trigger } from '../domain/webhooks/deliveries.js';
import { webhookHeaders } from '../domain/webhooks/signing.js';
import { alertWorkspaceAdmins } from '../domain/webhooks/alerts.js';
import type { WebhookAttemptSummary } from '../domain/webhooks/retry-schedule.js';
import {
  disableGoneEndpoint,
  disableIfFailingTooLong,
  runKey,
  type WebhookActivityDeps,
} from './webhook-endpoint-state.js';

export type DeliveryAttemptInput = { endpointId: string; messageId: string; trigger: Trigger };

/** One delivery attempt: post the message, record the attempt, then disable the endpoint on 410 or after failing too long. */
export async function attemptWebhookDelivery(
  deps: WebhookActivityDeps,
  input: DeliveryAttemptInput,
): Promise<WebhookAttemptSummary> {
  const { pool, config } = deps;
  const [endpoint] = await sendingEndpoints(pool, config.SECRETS_KEY, { id: input.endpointId });
  const message = await messagePayload(pool, input.messageId);
  if (!endpoint || !endpoint.enabled || !message) {
    return {
      outcome: 'endpoint-disabled',
      statusCode: null,
      retryAfterMs: null,
      error: endpoint ? 'endpoint disabled' : 'endpoint deleted',
      endpointDisabled: true,
    };
  }
  const attemptedAt = new Date();
  const headers = webhookHeaders({
    secrets: endpoint.secrets,
    msgId: input.messageId,
    body: message.payload,
    userAgent: config.WEBHOOK_USER_AGENT,
  });
  const result = await deps.sender.send(endpoint.url, headers, message.payload);
  const status = result.outcome === 'ok' ? 'delivered' : result.outcome === 'gone' ? 'failed' : null;
  await recordAttempts(pool, [
    { endpointId: endpoint.id, messageId: input.messageId, trigger: input.trigger, attemptedAt, result, status },
  ]);
  const summary: WebhookAttemptSummary = {
    outcome: result.outcome,
    statusCode: result.statusCode,
    retryAfterMs: result.retryAfterMs,
    error: result.error,
  };
  if (result.outcome === 'ok') return summary;

  const idem = runKey();
  if (result.outcome === 'gone') {
    await disableGoneEndpoint(deps, endpoint, input.messageId, idem);
    return { ...summary, endpointDisabled: true };
  }
  const disabled = await disableIfFailingTooLong(deps, endpoint, result.error, idem);
  return disabled ? { ...summary, endpointDisabled: true } : summary;
}

export type FinishDeliveryInput = {
  endpointId: string;
  messageId: string;
  attempts: number;
  lastError: string;
  alert: boolean;
  gone?: boolean;
};

/** The end of a delivery that did not succeed; `gone`: the dispatcher's first attempt got 410 (disable the endpoint). */
export async function finishWebhookDelivery(deps: WebhookActivityDeps, input: FinishDeliveryInput): Promise<void> {
  const { pool, config } = deps;
  await setDeliveryStatus(pool, input.endpointId, input.messageId, 'failed', input.lastError);
  const [endpoint] = await sendingEndpoints(pool, config.SECRETS_KEY, { id: input.endpointId });
  if (!endpoint) return;
  if (input.gone) {
    await disableGoneEndpoint(deps, endpoint, input.messageId, runKey());
    return;
  }
  if (!input.alert) return;
  await alertWorkspaceAdmins(deps, endpoint.workspaceId, {
    severity: 'warning',
    title: `Webhook delivery failed: ${input.messageId}`,
    message: `Message ${input.messageId} could not be delivered to ${endpoint.url} (${endpoint.id}) after ${input.attempts} attempts. Last error: ${input.lastError}. Replay it with POST /api/portal/webhooks/${endpoint.id}/replay once the endpoint works.`,
    idempotencyKey: `webhook-failed:${runKey()}`,
  });
}
