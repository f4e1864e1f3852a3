/**
 * The ERP integration: the workspace's tenant (its TenantClient's phase and Crossplane conditions,
 * as the tenant workflow mirrors them to PostgreSQL) and whether the dashboards have their ERP API user.
 */
import type { Condition, TenantPhase } from '../tenants/types.js';
import { routeOfTenant } from '../tenants/http-routes.js';
import type { IntegrationProvider, IntegrationState } from './provider.js';

const stateOfPhase: Record<TenantPhase, IntegrationState> = {
  Provisioning: 'pending',
  Ready: 'connected',
  Unavailable: 'degraded',
  Cancelled: 'disconnected',
  Deprovisioning: 'disconnected',
  Deprovisioned: 'disconnected',
};

export const erpIntegration: IntegrationProvider = {
  id: 'erp',
  name: 'ERP',
  async status({ pool, workspace }) {
    const { rows } = await pool.query<{
      tenant: string;
      tier: string;
      erp_version: string;
      phase: TenantPhase | null;
      conditions: Condition[] | null;
      generation: number | null;
      observed_generation: number | null;
      api_user: boolean;
    }>(
      `SELECT t.name AS tenant, t.tier, t.erp_version, c.phase, c.conditions, c.generation, c.observed_generation,
              EXISTS (SELECT 1 FROM tenant_erp_credentials e WHERE e.tenant = t.name) AS api_user
         FROM tenants t LEFT JOIN tenant_status c ON c.name = t.name
        WHERE t.workspace_id = $1 ORDER BY t.created_at LIMIT 1`,
      [workspace.id],
    );
    const t = rows[0];
    if (!t) return { state: 'not-configured', summary: 'This workspace has no ERP tenant.', details: {} };
    const host = (await routeOfTenant(pool, t.tenant))?.host ?? null;
    const details = {
      tenant: t.tenant,
      tier: t.tier,
      erpVersion: t.erp_version,
      host,
      dashboardUser: t.api_user,
      phase: t.phase,
      generation: t.generation,
      observedGeneration: t.observed_generation,
      conditions: t.conditions ?? [],
    };
    if (!t.phase) {
      // a tenant entered without a TenantClient (the local demo data): its route is what we know
      return host
        ? { state: 'connected', summary: `ERP ${t.erp_version} (${t.tier}) at ${host}.`, details }
        : { state: 'pending', summary: 'The ERP tenant has no route yet.', details };
    }
    const ready = t.conditions?.find((c) => c.type === 'Ready');
    const state = stateOfPhase[t.phase];
    const because = ready && ready.status !== 'True' && ready.message ? `: ${ready.message}` : '.';
    return { state, summary: `ERP ${t.erp_version} (${t.tier}) is ${t.phase}${because}`, details };
  },
};
