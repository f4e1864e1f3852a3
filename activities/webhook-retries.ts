/**
 * The activities of an endpoint's retry workflow (workflows/webhook-endpoint-retries.ts): the
 * endpoint's due messages, retried in batches, each batch's attempts and next due times recorded in
 * PostgreSQL; the endpoint disabled on 410 Gone or after failing for too long, its admins alerted;
 * and the dependencies every webhook activity is built from.
 */
import { Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Pool } from 'pg';
import type { Config } from '../lib/config.js';
import { describeDuration } from '../lib/durations.js';
import { inTraceOf } from '../lib/tracing.js';
import { sendingEndpoints } from '../domain/webhooks/endpoints.js';
import {
  disableEndpoint,
  disableEndpointFailingFor,
  dueDeliveries,
  failWaitingDeliveries,
  nextDue,
  recordAttempts,
  type RecordedAttempt,
} from '../domain/webhooks/deliveries.js';
import { attemptDelivery, retrySettings, type AttemptDeps } from '../domain/webhooks/attempt-delivery.js';
import type { WebhookSender } from '../domain/webhooks/http-sender.js';
import { alertWorkspaceAdmins } from '../domain/webhooks/alerts.js';

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
export function runKey(): string {
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
export type DeliveryEndpoint = { id: string; url: string; workspaceId: string };

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
export async function disableGoneEndpoint(
  deps: WebhookActivityDeps,
  endpoint: DeliveryEndpoint,
  messageId: string,
  idem: string,
): Promise<void> {
  if (await disableEndpoint(deps.pool, endpoint.id, 'the receiver answered 410 Gone')) {
    await alertWorkspaceAdmins(deps, endpoint.workspaceId, goneAlert(endpoint, messageId, idem));
  }
}

/** Disables an endpoint that has failed every delivery for longer than WEBHOOK_DISABLE_AFTER, alerting its admins; true if it did. */
export async function disableIfFailingTooLong(
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

/**
 * The endpoint's due messages, in batches of RETRY_BATCH with at most WEBHOOK_ENDPOINT_CONCURRENCY
 * POSTs at a time; each batch's attempts recorded in one statement with their next due times (a
 * worker killed mid-batch: the retried activity takes only what is still due). Waits itself for
 * messages due within LINGER_MS; returns when the next is due later, after RUN_MAX_MS, or when the
 * endpoint is disabled (410, failing for WEBHOOK_DISABLE_AFTER, disabled or deleted meanwhile: its
 * waiting messages fail). Messages whose retries are used up fail, and the admins are alerted.
 */
export async function deliverDueWebhooks(
  deps: WebhookActivityDeps,
  input: { endpointId: string },
): Promise<DueDeliveriesOutcome> {
  const { pool, config } = deps;
  const started = Date.now();
  const settings = retrySettings(config);
  const attemptDeps: AttemptDeps = { sender: deps.sender, userAgent: config.WEBHOOK_USER_AGENT, settings };
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
    const attempts = await Promise.all(
      due.map(({ messageId, payload, trigger, attemptsBefore, trace }) =>
        // each attempt is a span of the trace of the event that caused the message
        slots(() =>
          inTraceOf(trace, () =>
            attemptDelivery(attemptDeps, { endpoint, messageId, payload, trigger, attemptsBefore }),
          ),
        ),
      ),
    );
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

/**
 * The receiver answered the dispatcher's first attempt of `messageId` 410 Gone: the endpoint is
 * disabled (its admins told), and its messages waiting for a retry fail; answers how many.
 */
export async function disableGoneWebhookEndpoint(
  deps: WebhookActivityDeps,
  input: { endpointId: string; messageId: string },
): Promise<number> {
  const [endpoint] = await sendingEndpoints(deps.pool, deps.config.SECRETS_KEY, { id: input.endpointId });
  if (endpoint) await disableGoneEndpoint(deps, endpoint, input.messageId, runKey());
  return failWaitingDeliveries(deps.pool, input.endpointId, 'the receiver answered 410 Gone');
}
