/**
 * The webhook activities: the endpoint's retry batches and its disabling on 410 Gone
 * (webhook-retries.ts), and the daily jobs beside them (retention, the ERP events catch-up).
 */
import { Context } from '@temporalio/activity';
import { deleteExpiredWebhookHistory } from '../domain/webhooks/retention.js';
import { sweepAll } from '../domain/erp-events/sweep.js';
import { deliverDueWebhooks, disableGoneWebhookEndpoint, type WebhookActivityDeps } from './webhook-retries.js';

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

export const createWebhookActivities = (deps: WebhookActivityDeps) => ({
  deliverDueWebhooks: (input: { endpointId: string }) => deliverDueWebhooks(deps, input),
  applyWebhookRetention: () => applyWebhookRetention(deps),
  sweepErpEvents: () => sweepErpEvents(deps),
  disableGoneWebhookEndpoint: (input: { endpointId: string; messageId: string }) =>
    disableGoneWebhookEndpoint(deps, input),
});
