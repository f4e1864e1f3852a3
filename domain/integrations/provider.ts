/**
 * What an integration provider is (specification §4.1 `GET /api/portal/integrations`): a named
 * source that answers the status of its integration for one workspace. The providers (erp.ts,
 * platform.ts) implement it; the registry that lists them is providers.ts.
 */
import type pg from 'pg';

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
  status: async () => ({
    state: 'not-configured',
    summary: `${what} This deployment does not offer it yet.`,
    details: {},
  }),
});
