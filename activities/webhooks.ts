/**
 * The webhook retry workflow's activities (workflows/webhook-delivery.ts): one attempt (post,
 * record, disable on 410 or after failing too long), and the end of a failed delivery (mark
 * failed, alert the workspace admins).
 */
import { deleteExpiredWebhookHistory } from '../domain/webhooks/retention.js';
import { sweepAll } from '../domain/erp-events/sweep.js';
import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { Config } from '../lib/config.js';
import { describeDuration } from '../lib/durations.js';
import { sendingEndpoints } from '../domain/webhooks/endpoints.js';
import {
  disableEndpoint,
  disableEndpointFailingFor,
  messagePayload,
  recordAttempts,
  setDeliveryStatus,
  type Trigger,
} from '../domain/webhooks/deliveries.js';
import { webhookHeaders } from '../domain/webhooks/signing.js';
import type { WebhookSender } from '../domain/webhooks/http-sender.js';
import { alertWorkspaceAdmins } from '../domain/webhooks/alerts.js';
import type { WebhookAttemptSummary } from '../domain/webhooks/retry-schedule.js';

export interface WebhookActivityDeps {
  pool: Pool;
  config: Config;
  sender: WebhookSender;
  notificationsUrl: string;
  notificationsKey: () => Promise<string>;
  /** The worker → events key (the sweep publishes through the events service). */
  eventsKey: () => Promise<string>;
}

/** The delivery's workflow run: the idempotency key of its alerts. */
function runKey(): string {
  const w = Context.current().info.workflowExecution;
  return `${w?.workflowId ?? 'none'}:${w?.runId ?? ''}`;
}

const goneAlert = (endpoint: { id: string; url: string }, messageId: string, idem: string) => ({
  severity: 'warning' as const,
  title: 'Webhook endpoint disabled: it answered 410 Gone',
  message: `Your webhook endpoint ${endpoint.url} (${endpoint.id}) answered 410 Gone to message ${messageId}, so it was disabled. Re-enable it in the portal (PATCH enabled: true) once it takes deliveries again.`,
  idempotencyKey: `webhook-disabled:${idem}`,
});

type Alert = Parameters<typeof alertWorkspaceAdmins>[2];
type DeliveryEndpoint = { id: string; url: string; workspaceId: string };

const failingTooLongAlert = (
  endpoint: DeliveryEndpoint,
  failingSince: Date,
  period: string,
  lastError: string | null,
  idem: string,
): Alert => ({
  severity: 'warning',
  title: 'Webhook endpoint disabled: failing for too long',
  message:
    `Your webhook endpoint ${endpoint.url} (${endpoint.id}) has failed every delivery since ${failingSince.toISOString()}, ` +
    `for more than ${period}, so it was disabled and gets no more deliveries. Last error: ${lastError}. ` +
    `Re-enable it in the portal (PATCH enabled: true) once it works, then replay the failed messages (POST /api/portal/webhooks/${endpoint.id}/replay).`,
  idempotencyKey: `webhook-disabled:${idem}`,
});

/** Disables an endpoint that answered 410 Gone and, if this call disabled it, alerts its workspace admins. */
async function disableGoneEndpoint(
  deps: WebhookActivityDeps,
  endpoint: DeliveryEndpoint,
  messageId: string,
  idem: string,
): Promise<void> {
  if (await disableEndpoint(deps.pool, endpoint.id, 'the receiver answered 410 Gone')) {
    await alertWorkspaceAdmins(deps, endpoint.workspaceId, goneAlert(endpoint, messageId, idem));
  }
}

/** The daily retention (schedule `webhook-retention`): old messages and attempts of ended deliveries; idempotent. */
async function applyWebhookRetention(
  deps: WebhookActivityDeps,
): Promise<{ retentionDays: number; messages: number; attempts: number }> {
  const { pool, config } = deps;
  return {
    retentionDays: config.WEBHOOK_RETENTION_DAYS,
    ...(await deleteExpiredWebhookHistory(pool, config.WEBHOOK_RETENTION_DAYS)),
  };
}

/** The ERP events catch-up (schedule `erp-events-sweep`): every tenant with a route; one tenant failing is reported, not thrown. */
async function sweepErpEvents(deps: WebhookActivityDeps): Promise<{
  tenants: number;
  published: number;
  baselines: number;
  failed: { tenant: string; error: string }[];
}> {
  const { pool, config } = deps;
  const results = await sweepAll(
    {
      pool,
      settleMs: config.ERP_EVENTS_SWEEP_SETTLE,
      erpUrl: config.ERP_URL,
      secretsKey: config.SECRETS_KEY,
      eventsUrl: config.EVENTS_URL,
      eventsKey: deps.eventsKey,
    },
    { heartbeat: () => Context.current().heartbeat() },
  );
  return {
    tenants: results.length,
    published: results.reduce((n, r) => n + r.published, 0),
    baselines: results.filter((r) => r.baseline && !r.error).length,
    failed: results.filter((r) => r.error).map((r) => ({ tenant: r.tenant, error: r.error! })),
  };
}

type DeliveryAttemptInput = { endpointId: string; messageId: string; trigger: Trigger };

/** One delivery attempt: post the message, record the attempt, then disable the endpoint on 410 or after failing too long. */
async function attemptWebhookDelivery(
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

/** Disables an endpoint that has failed every delivery for longer than WEBHOOK_DISABLE_AFTER, alerting its admins; true if it did. */
async function disableIfFailingTooLong(
  deps: WebhookActivityDeps,
  endpoint: DeliveryEndpoint,
  lastError: string | null,
  idem: string,
): Promise<boolean> {
  const { pool, config } = deps;
  const period = describeDuration(config.WEBHOOK_DISABLE_AFTER);
  const disabled = await disableEndpointFailingFor(
    pool,
    endpoint.id,
    config.WEBHOOK_DISABLE_AFTER,
    `failing for more than ${period}`,
  );
  if (!disabled) return false;
  await alertWorkspaceAdmins(
    deps,
    endpoint.workspaceId,
    failingTooLongAlert(endpoint, disabled.failingSince, period, lastError, idem),
  );
  return true;
}

type FinishDeliveryInput = {
  endpointId: string;
  messageId: string;
  attempts: number;
  lastError: string;
  alert: boolean;
  gone?: boolean;
};

/** The end of a delivery that did not succeed; `gone`: the dispatcher's first attempt got 410 (disable the endpoint). */
async function finishWebhookDelivery(deps: WebhookActivityDeps, input: FinishDeliveryInput): Promise<void> {
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

export const createWebhookActivities = (deps: WebhookActivityDeps) => ({
  applyWebhookRetention: () => applyWebhookRetention(deps),
  sweepErpEvents: () => sweepErpEvents(deps),
  attemptWebhookDelivery: (input: DeliveryAttemptInput) => attemptWebhookDelivery(deps, input),
  finishWebhookDelivery: (input: FinishDeliveryInput) => finishWebhookDelivery(deps, input),
});
