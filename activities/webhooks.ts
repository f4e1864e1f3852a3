/**
 * The webhook retry workflow's activities (workflows/webhook-delivery.ts): one attempt (post,
 * record, disable on 410 or after failing too long), and the end of a failed delivery (mark
 * failed, alert the workspace admins).
 */
import { deleteExpiredWebhookHistory } from '../domain/webhooks/retention.js';
import { sweepAll } from '../domain/erp-events/sweep.js';
import { Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
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
import {
  retryDelay,
  type WebhookAttemptSummary,
  type WebhookRetrySettings,
} from '../domain/webhooks/retry-schedule.js';
import { retrySettings } from '../domain/webhooks/delivery-retries.js';
import { dueDeliveries, failWaitingDeliveries, nextDue, type DueDelivery } from '../domain/webhooks/retry-queue.js';
import type { SendingEndpoint } from '../domain/webhooks/endpoints.js';
import type { RecordedAttempt } from '../domain/webhooks/deliveries.js';

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

/** Due messages taken per batch (each batch: one SELECT, the POSTs, one INSERT of their attempts). */
const RETRY_BATCH = 200;
/** The activity waits itself for a message due within this, rather than returning to the workflow's timer. */
const LINGER_MS = 5_000;
/** After this long the activity returns (the next batch is another activity in the history). */
const RUN_MAX_MS = 60_000;

export interface DueDeliveriesOutcome {
  attempts: number;
  delivered: number;
  /** Messages failed for good by this call (retries used up, 410, endpoint disabled). */
  failed: number;
  endpointDisabled: boolean;
  /** When the next waiting message is due (epoch ms), null: none waits. */
  nextDueAt: number | null;
}

/** One retry of a due message: POST it and answer the attempt to record with its next due time. */
async function retryOne(
  deps: WebhookActivityDeps,
  endpoint: SendingEndpoint,
  d: DueDelivery,
  settings: WebhookRetrySettings,
): Promise<RecordedAttempt> {
  const attemptedAt = new Date();
  const headers = webhookHeaders({
    secrets: endpoint.secrets,
    msgId: d.messageId,
    body: d.payload,
    userAgent: deps.config.WEBHOOK_USER_AGENT,
  });
  const result = await deps.sender.send(endpoint.url, headers, d.payload);
  const recorded = { endpointId: endpoint.id, messageId: d.messageId, trigger: 'retry' as const, attemptedAt, result };
  if (result.outcome === 'ok') return { ...recorded, status: 'delivered' };
  if (result.outcome === 'gone') return { ...recorded, status: 'failed' };
  // attempts made before this one = the index of the wait after it
  const delay = retryDelay(settings, d.attempts, result, Math.random);
  if (delay === undefined) return { ...recorded, status: 'failed' };
  return {
    ...recorded,
    status: 'retrying',
    nextAttemptAt: new Date(attemptedAt.getTime() + result.durationMs + delay),
  };
}

/**
 * The endpoint's due messages, in batches of RETRY_BATCH with at most WEBHOOK_ENDPOINT_CONCURRENCY
 * POSTs at a time; each batch's attempts recorded in one statement with their next due times (a
 * worker killed mid-batch: the retried activity takes only what is still due). Waits itself for
 * messages due within LINGER_MS; returns when the next is due later, after RUN_MAX_MS, or when the
 * endpoint is disabled (410, failing for WEBHOOK_DISABLE_AFTER, disabled or deleted meanwhile: its
 * waiting messages fail). Messages whose retries are used up fail, and the admins are alerted.
 */
async function deliverDueWebhooks(
  deps: WebhookActivityDeps,
  input: { endpointId: string },
): Promise<DueDeliveriesOutcome> {
  const { pool, config } = deps;
  const started = Date.now();
  const settings = retrySettings(config);
  const slots = pLimit(config.WEBHOOK_ENDPOINT_CONCURRENCY);
  const out: DueDeliveriesOutcome = { attempts: 0, delivered: 0, failed: 0, endpointDisabled: false, nextDueAt: null };
  const heartbeat = () => Context.current().heartbeat(out);
  for (;;) {
    const [endpoint] = await sendingEndpoints(pool, config.SECRETS_KEY, { id: input.endpointId });
    if (!endpoint || !endpoint.enabled) {
      out.failed += await failWaitingDeliveries(
        pool,
        input.endpointId,
        endpoint ? 'endpoint disabled' : 'endpoint deleted',
      );
      return { ...out, endpointDisabled: true };
    }
    const due = await dueDeliveries(pool, endpoint.id, RETRY_BATCH);
    if (due.length === 0) {
      const next = await nextDue(pool, endpoint.id);
      if (next.dueAt === null) return out;
      const wait = Math.max(0, next.dueAt.getTime() - next.now.getTime());
      if (wait > LINGER_MS || Date.now() - started > RUN_MAX_MS) return { ...out, nextDueAt: Date.now() + wait };
      heartbeat();
      await sleep(wait);
      continue;
    }
    const attempts = await Promise.all(due.map((d) => slots(() => retryOne(deps, endpoint, d, settings))));
    await recordAttempts(pool, attempts);
    heartbeat();
    out.attempts += attempts.length;
    out.delivered += attempts.filter((a) => a.status === 'delivered').length;
    const exhausted = attempts.filter((a) => a.status === 'failed' && a.result.outcome !== 'gone');
    out.failed += attempts.filter((a) => a.status === 'failed').length;
    const gone = attempts.find((a) => a.result.outcome === 'gone');
    const idem = runKey();
    if (gone) {
      await disableGoneEndpoint(deps, endpoint, gone.messageId, idem);
      out.failed += await failWaitingDeliveries(pool, endpoint.id, 'the receiver answered 410 Gone');
      return { ...out, endpointDisabled: true };
    }
    const lastFailure = attempts.filter((a) => a.status !== 'delivered').at(-1);
    if (lastFailure && (await disableIfFailingTooLong(deps, endpoint, lastFailure.result.error, idem))) {
      out.failed += await failWaitingDeliveries(pool, endpoint.id, 'endpoint disabled: failing for too long');
      return { ...out, endpointDisabled: true };
    }
    if (exhausted.length > 0) await alertRetriesUsedUp(deps, endpoint, exhausted, settings.scheduleMs.length + 1);
  }
}

/** Tells the admins which messages failed for good (one alert per batch; one message: its id in the title). */
async function alertRetriesUsedUp(
  deps: WebhookActivityDeps,
  endpoint: DeliveryEndpoint,
  failed: RecordedAttempt[],
  attempts: number,
): Promise<void> {
  const ids = failed.map((a) => a.messageId);
  const one = ids.length === 1;
  await alertWorkspaceAdmins(deps, endpoint.workspaceId, {
    severity: 'warning',
    title: one ? `Webhook delivery failed: ${ids[0]}` : `Webhook delivery failed: ${ids.length} messages`,
    message:
      `${one ? `Message ${ids[0]}` : `${ids.length} messages (${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ', …' : ''})`} could not be delivered to ${endpoint.url} (${endpoint.id}) after ${attempts} attempts. ` +
      `Last error: ${failed.at(-1)!.result.error}. Replay ${one ? 'it' : 'them'} with POST /api/portal/webhooks/${endpoint.id}/replay once the endpoint works.`,
    idempotencyKey: `webhook-failed:${endpoint.id}:${ids[0]}`,
  });
}

export const createWebhookActivities = (deps: WebhookActivityDeps) => ({
  deliverDueWebhooks: (input: { endpointId: string }) => deliverDueWebhooks(deps, input),
  applyWebhookRetention: () => applyWebhookRetention(deps),
  sweepErpEvents: () => sweepErpEvents(deps),
  attemptWebhookDelivery: (input: DeliveryAttemptInput) => attemptWebhookDelivery(deps, input),
  finishWebhookDelivery: (input: FinishDeliveryInput) => finishWebhookDelivery(deps, input),
});
