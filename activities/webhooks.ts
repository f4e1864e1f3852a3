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

export const createWebhookActivities = (deps: WebhookActivityDeps) => {
  const { pool, config } = deps;
  const alert = (workspaceId: string, a: Parameters<typeof alertWorkspaceAdmins>[2]) =>
    alertWorkspaceAdmins(deps, workspaceId, a);

  return {
    /** The daily retention (schedule `webhook-retention`): old messages and attempts of ended deliveries; idempotent. */
    async applyWebhookRetention(): Promise<{ retentionDays: number; messages: number; attempts: number }> {
      return {
        retentionDays: config.WEBHOOK_RETENTION_DAYS,
        ...(await deleteExpiredWebhookHistory(pool, config.WEBHOOK_RETENTION_DAYS)),
      };
    },

    /** The ERP events catch-up (schedule `erp-events-sweep`): every tenant with a route; one tenant failing is reported, not thrown. */
    async sweepErpEvents(): Promise<{
      tenants: number;
      published: number;
      baselines: number;
      failed: { tenant: string; error: string }[];
    }> {
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
    },

    async attemptWebhookDelivery(input: {
      endpointId: string;
      messageId: string;
      trigger: Trigger;
    }): Promise<WebhookAttemptSummary> {
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
        if (await disableEndpoint(pool, endpoint.id, 'the receiver answered 410 Gone')) {
          await alert(endpoint.workspaceId, goneAlert(endpoint, input.messageId, idem));
        }
        return { ...summary, endpointDisabled: true };
      }
      const period = describeDuration(config.WEBHOOK_DISABLE_AFTER);
      const disabled = await disableEndpointFailingFor(
        pool,
        endpoint.id,
        config.WEBHOOK_DISABLE_AFTER,
        `failing for more than ${period}`,
      );
      if (disabled) {
        await alert(endpoint.workspaceId, {
          severity: 'warning',
          title: 'Webhook endpoint disabled: failing for too long',
          message:
            `Your webhook endpoint ${endpoint.url} (${endpoint.id}) has failed every delivery since ${disabled.failingSince.toISOString()}, ` +
            `for more than ${period}, so it was disabled and gets no more deliveries. Last error: ${result.error}. ` +
            `Re-enable it in the portal (PATCH enabled: true) once it works, then replay the failed messages (POST /api/portal/webhooks/${endpoint.id}/replay).`,
          idempotencyKey: `webhook-disabled:${idem}`,
        });
        return { ...summary, endpointDisabled: true };
      }
      return summary;
    },

    /** The end of a delivery that did not succeed; `gone`: the dispatcher's first attempt got 410 (disable the endpoint). */
    async finishWebhookDelivery(input: {
      endpointId: string;
      messageId: string;
      attempts: number;
      lastError: string;
      alert: boolean;
      gone?: boolean;
    }): Promise<void> {
      await setDeliveryStatus(pool, input.endpointId, input.messageId, 'failed', input.lastError);
      const [endpoint] = await sendingEndpoints(pool, config.SECRETS_KEY, { id: input.endpointId });
      if (!endpoint) return;
      if (input.gone) {
        if (await disableEndpoint(pool, endpoint.id, 'the receiver answered 410 Gone')) {
          await alert(endpoint.workspaceId, goneAlert(endpoint, input.messageId, runKey()));
        }
        return;
      }
      if (!input.alert) return;
      await alert(endpoint.workspaceId, {
        severity: 'warning',
        title: `Webhook delivery failed: ${input.messageId}`,
        message: `Message ${input.messageId} could not be delivered to ${endpoint.url} (${endpoint.id}) after ${input.attempts} attempts. Last error: ${input.lastError}. Replay it with POST /api/portal/webhooks/${endpoint.id}/replay once the endpoint works.`,
        idempotencyKey: `webhook-failed:${runKey()}`,
      });
    },
  };
};
