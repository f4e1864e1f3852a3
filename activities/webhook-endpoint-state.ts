/**
 * What the webhook activities share: their dependencies, and the endpoint's state changes a failed
 * delivery can cause (disabled on 410 Gone or after failing too long), each alerting the workspace admins.
 */
import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { Config } from '../lib/config.js';
import { describeDuration } from '../lib/durations.js';
import { disableEndpoint, disableEndpointFailingFor } from '../domain/webhooks/deliveries.js';
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
