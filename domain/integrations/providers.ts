/**
 * The integrations a workspace has (specification §4.1 `GET /api/portal/integrations`), as a
 * registry of providers: each one answers the status of its integration for one workspace. The
 * ERP reads the tenant's TenantClient phase and conditions; bank consents, webhooks and agents read
 * their services' tables (platform.ts). What a provider is, and `notConfigured` for an integration a
 * deployment lacks: provider.ts.
 */
import { erpIntegration } from './erp.js';
import { agentsIntegration, bankConsentsIntegration, webhooksIntegration } from './platform.js';
import type { IntegrationContext, IntegrationProvider, IntegrationStatus } from './provider.js';

export type { IntegrationContext, IntegrationProvider, IntegrationState, IntegrationStatus } from './provider.js';

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
        return {
          id: p.id,
          name: p.name,
          state: 'degraded' as const,
          summary: 'The status could not be read just now; retry shortly.',
          details: {},
        };
      }
    }),
  );
}
