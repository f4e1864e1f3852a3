/** The platform's own records of a tenant: the subdomain reservation, the tenants row, the status mirror. */
import { ApplicationFailure } from '@temporalio/common';
import { withTransaction } from '../lib/db.js';
import { tenantHostname } from '../domain/erp/tenant-database.js';
import { TenantErrorType } from '../workflows/tenant-definitions.js';
import type { TenantClientSpec, TenantStatus } from '../workflows/tenant-definitions.js';
import type { TenantActivityDeps } from './tenant-deps.js';

export const createTenantRegistryActivities = ({ config, platformPool }: TenantActivityDeps) => ({
  /**
   * Reserves the subdomain for this TenantClient (uid) with the primary key of
   * `subdomain_reservations`, never a check-then-insert; then writes the `tenants` row the rest of
   * the platform (routes, credentials, welcome e-mail, portal) refers to. Taken by another
   * TenantClient: a non-retryable SubdomainTaken failure.
   */
  async reserveSubdomain(input: { name: string; uid: string; spec: TenantClientSpec }): Promise<{ reserved: 'new' | 'already-ours'; hostname: string }> {
    return withTransaction(platformPool, async (db) => {
      const inserted = await db.query(
        `INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2) ON CONFLICT (subdomain) DO NOTHING`,
        [input.spec.subdomain, input.uid],
      );
      if (!inserted.rowCount) {
        const { rows } = await db.query<{ owner_uid: string }>('SELECT owner_uid FROM subdomain_reservations WHERE subdomain = $1', [input.spec.subdomain]);
        if (rows[0]?.owner_uid !== input.uid) {
          throw ApplicationFailure.create({
            type: TenantErrorType.SubdomainTaken,
            message: `subdomain "${input.spec.subdomain}" is reserved by another TenantClient`,
            nonRetryable: true,
          });
        }
      }
      const { spec } = input;
      await db.query(
        `INSERT INTO tenants (name, project_id, tier, erp_version, owner_email, owner_name)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (name) DO UPDATE SET project_id = EXCLUDED.project_id, tier = EXCLUDED.tier,
           erp_version = EXCLUDED.erp_version, owner_email = EXCLUDED.owner_email, owner_name = EXCLUDED.owner_name`,
        [input.name, spec.projectId, spec.tier, spec.erpVersion, spec.ownerEmail, spec.ownerName],
      );
      return { reserved: inserted.rowCount ? 'new' : 'already-ours', hostname: tenantHostname(spec.subdomain, config.TENANT_DOMAIN) };
    });
  },

  /**
   * Mirrors the workflow's status to `tenant_clients` (for `get tenants` and the portal). Only
   * the row of this TenantClient (uid) is written; a missing row (the apply that started the
   * workflow has not committed yet) is retried.
   */
  async recordTenantStatus(input: { name: string; uid: string; status: TenantStatus }): Promise<void> {
    const { status } = input;
    const res = await platformPool.query(
      `UPDATE tenant_clients
          SET observed_generation = $3, phase = $4, conditions = $5, resources = $6, steps = $7, status = $8, updated_at = now()
        WHERE name = $1 AND uid = $2`,
      [input.name, input.uid, status.observedGeneration, status.phase, JSON.stringify(status.conditions),
        JSON.stringify(status.resources), JSON.stringify(status.steps), JSON.stringify(status)],
    );
    if (!res.rowCount) throw new Error(`tenant_clients row ${input.name} (${input.uid}) not there yet`);
  },
});
