/**
 * The integrations a workspace has (specification §4.1 `GET /api/portal/integrations`), as a
 * registry of providers: each one answers the status of its integration for one workspace. The
 * ERP reads the tenant's TenantClient phase and conditions; bank consents, webhooks and agents read
 * their services' tables (platform.ts). `notConfigured` is for an integration a deployment lacks.
 */
import type pg from 'pg';
import { erpIntegration } from './erp.js';
import { agentsIntegration, bankConsentsIntegration, webhooksIntegration } from './platform.js';

/** connected: works; pending: being set up; degraded: set up but failing; disconnected: ended; not-configured: nothing set up. */
export type IntegrationState = 'connected' | 'pending' | 'degraded' | 'disconnected' | 'not-configured';

export interface IntegrationStatus {
  id: string;
  name: string;
  state: IntegrationState;
  /** One sentence for a person. */
  summary: string;
  /** What the provider knows in detail (e.g. the ERP's phase and conditions). */
  details: Record<string, unknown>;
}

export interface IntegrationContext {
  pool: pg.Pool;
  workspace: { id: string; slug: string };
}

export interface IntegrationProvider {
  id: string;
  name: string;
  status(ctx: IntegrationContext): Promise<Omit<IntegrationStatus, 'id' | 'name'>>;
}

/** A provider whose service is not part of this deployment yet: it says so. */
export const notConfigured = (id: string, name: string, what: string): IntegrationProvider => ({
  id,
  name,
  status: async () => ({ state: 'not-configured', summary: `${what} This deployment does not offer it yet.`, details: {} }),
});

export const integrationProviders: readonly IntegrationProvider[] = [
  erpIntegration,
  bankConsentsIntegration,
  webhooksIntegration,
  agentsIntegration,
];

/** Every provider's status; a provider that fails shows as degraded with a generic summary, the others still answer. */
export async function integrationStatuses(
  ctx: IntegrationContext,
  providers: readonly IntegrationProvider[] = integrationProviders,
  log?: { warn(obj: object, msg: string): void },
): Promise<IntegrationStatus[]> {
  return Promise.all(
    providers.map(async (p) => {
      try {
        return { id: p.id, name: p.name, ...(await p.status(ctx)) };
      } catch (err) {
        log?.warn({ integration: p.id, err: (err as Error).name }, 'integration status failed');
        return { id: p.id, name: p.name, state: 'degraded' as const, summary: 'The status could not be read just now; retry shortly.', details: {} };
      }
    }),
  );
}
