/**
 * The integration statuses read from the platform's own tables: bank consents (banking_consents),
 * webhook endpoints (webhook_endpoints, webhook_deliveries) and agents (agent_executions). Counts
 * and states only: never a consent id, a URL's secret or a question.
 */
import type { IntegrationProvider } from './provider.js';

export const bankConsentsIntegration: IntegrationProvider = {
  id: 'bank-consents',
  name: 'Bank consents (PSD2)',
  async status({ pool, workspace }) {
    const { rows } = await pool.query<{ status: string; n: number; banks: string[] }>(
      `SELECT status, count(*)::int AS n, array_agg(DISTINCT bank_id) AS banks FROM banking_consents
        WHERE workspace_id = $1 AND (status <> 'valid' OR valid_until >= current_date) GROUP BY status`,
      [workspace.id],
    );
    const by = Object.fromEntries(rows.map((r) => [r.status, r]));
    const details = { consents: Object.fromEntries(rows.map((r) => [r.status, r.n])) };
    if (by.valid)
      return { state: 'connected', summary: `${by.valid.n} valid consent(s): ${by.valid.banks.join(', ')}.`, details };
    if (by.received)
      return { state: 'pending', summary: "A consent waits for the bank's strong customer authentication.", details };
    if (rows.length)
      return {
        state: 'disconnected',
        summary: 'No consent is valid any more (expired, revoked or rejected); ask for a new one.',
        details,
      };
    return { state: 'not-configured', summary: 'No bank account is connected.', details };
  },
};

export const webhooksIntegration: IntegrationProvider = {
  id: 'webhooks',
  name: 'Webhooks',
  async status({ pool, workspace }) {
    const { rows } = await pool.query<{ enabled: number; disabled: number; failed_24h: number }>(
      `SELECT count(*) FILTER (WHERE e.enabled)::int AS enabled, count(*) FILTER (WHERE NOT e.enabled)::int AS disabled,
              (SELECT count(*)::int FROM webhook_deliveries d WHERE d.workspace_id = $1 AND d.status = 'failed' AND d.created_at > now() - interval '24 hours') AS failed_24h
         FROM webhook_endpoints e WHERE e.workspace_id = $1`,
      [workspace.id],
    );
    const { enabled, disabled, failed_24h } = rows[0]!;
    const details = { enabledEndpoints: enabled, disabledEndpoints: disabled, failedDeliveries24h: failed_24h };
    if (enabled === 0 && disabled === 0)
      return { state: 'not-configured', summary: 'No webhook endpoint is registered.', details };
    if (enabled === 0) return { state: 'disconnected', summary: `All ${disabled} endpoint(s) are disabled.`, details };
    if (disabled > 0 || failed_24h > 0) {
      return {
        state: 'degraded',
        summary: `${enabled} endpoint(s) enabled; ${disabled} disabled, ${failed_24h} delivery(ies) failed in the last 24 h.`,
        details,
      };
    }
    return { state: 'connected', summary: `${enabled} endpoint(s) receiving events.`, details };
  },
};

export const agentsIntegration: IntegrationProvider = {
  id: 'agents',
  name: 'AI agents',
  async status({ pool, workspace }) {
    const { rows } = await pool.query<{ total: number; failed: number; last: Date | null }>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE outcome = 'failed')::int AS failed, max(started_at) AS last
         FROM agent_executions WHERE workspace_id = $1 AND started_at > now() - interval '7 days'`,
      [workspace.id],
    );
    const { total, failed, last } = rows[0]!;
    const details = { executions7d: total, failed7d: failed, lastUsedAt: last?.toISOString() ?? null };
    if (total === 0)
      return {
        state: 'not-configured',
        summary: 'No agent was asked anything in the last 7 days (a key with agents:invoke can).',
        details,
      };
    if (failed * 2 > total)
      return { state: 'degraded', summary: `${failed} of ${total} agent calls failed in the last 7 days.`, details };
    return { state: 'connected', summary: `${total} agent call(s) in the last 7 days.`, details };
  },
};
