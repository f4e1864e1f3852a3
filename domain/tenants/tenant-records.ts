/**
 * The platform's own records of a tenant (its repository): the subdomain reservation, the
 * `tenants` row the rest of the platform refers to, and the status its workflow publishes in
 * `tenant_status`.
 */
import type pg from 'pg';
import { listenToChannel, withTransaction, type ChannelListener } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { tenantHostname } from '../erp/tenant-database.js';
import type { TenantClientSpec, TenantStatus } from './types.js';

/** The subdomain is reserved by another TenantClient: retrying cannot help. */
export class SubdomainTakenError extends Error {
  override name = 'SubdomainTakenError';
  constructor(subdomain: string) {
    super(`subdomain "${subdomain}" is reserved by another TenantClient`);
  }
}

/**
 * Reserves the subdomain for this TenantClient (uid) with the primary key of
 * `subdomain_reservations`, never a check-then-insert; then writes the `tenants` row.
 */
export async function reserveSubdomain(
  pool: pg.Pool,
  input: { name: string; uid: string; spec: TenantClientSpec; tenantDomain: string },
): Promise<{ reserved: 'new' | 'already-ours'; hostname: string }> {
  const { spec } = input;
  return withTransaction(pool, async (db) => {
    const inserted = await db.query(
      `INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2) ON CONFLICT (subdomain) DO NOTHING`,
      [spec.subdomain, input.uid],
    );
    if (!inserted.rowCount) {
      const { rows } = await db.query<{ owner_uid: string }>(
        'SELECT owner_uid FROM subdomain_reservations WHERE subdomain = $1',
        [spec.subdomain],
      );
      if (rows[0]?.owner_uid !== input.uid) throw new SubdomainTakenError(spec.subdomain);
    }
    await db.query(
      `INSERT INTO tenants (name, project_id, tier, erp_version, owner_email, owner_name)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (name) DO UPDATE SET project_id = EXCLUDED.project_id, tier = EXCLUDED.tier,
         erp_version = EXCLUDED.erp_version, owner_email = EXCLUDED.owner_email, owner_name = EXCLUDED.owner_name`,
      [input.name, spec.projectId, spec.tier, spec.erpVersion, spec.ownerEmail, spec.ownerName],
    );
    return {
      reserved: inserted.rowCount ? 'new' : 'already-ours',
      hostname: tenantHostname(spec.subdomain, input.tenantDomain),
    };
  });
}

/**
 * Publishes the workflow's status, with the spec and generation it accepted, to `tenant_status` (its
 * only writer): for `get tenants`, the portal, the platform's checks and the TenantClient
 * controller. The row belongs to one TenantClient object (uid); false when another one's row holds
 * the name.
 */
export async function recordTenantStatus(
  pool: pg.Pool,
  input: { name: string; uid: string; spec: TenantClientSpec; status: TenantStatus },
): Promise<boolean> {
  const { status } = input;
  const res = await pool.query(
    `INSERT INTO tenant_status AS s (name, uid, spec, generation, observed_generation, phase, conditions, resources, steps, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (name) DO UPDATE
        SET spec = EXCLUDED.spec, generation = EXCLUDED.generation, observed_generation = EXCLUDED.observed_generation,
            phase = EXCLUDED.phase, conditions = EXCLUDED.conditions, resources = EXCLUDED.resources,
            steps = EXCLUDED.steps, status = EXCLUDED.status, updated_at = now()
      WHERE s.uid = EXCLUDED.uid`,
    [
      input.name,
      input.uid,
      JSON.stringify(input.spec),
      status.generation,
      status.observedGeneration,
      status.phase,
      JSON.stringify(status.conditions),
      JSON.stringify(status.resources),
      JSON.stringify(status.steps),
      JSON.stringify(status),
    ],
  );
  return Boolean(res.rowCount);
}

/** A tenant's status as its workflow last published it, and the TenantClient object (uid) it belongs to. */
export interface PublishedTenant {
  uid: string;
  status: TenantStatus;
}

/**
 * Calls `onWrite` with a tenant's name each time its workflow publishes its status
 * (migrations/853_tenant_status.sql); `onReconnect` when writes may have been missed (the
 * connection was lost and made again).
 */
export function watchTenantStatusWrites(
  databaseUrl: string,
  log: Logger,
  on: { onWrite: (name: string) => void; onReconnect: () => void },
): Promise<ChannelListener> {
  return listenToChannel(databaseUrl, 'tenant_status_writes', {
    onNotice: on.onWrite,
    onReconnect: () => {
      log.info('listening to tenant status writes again');
      on.onReconnect();
    },
    onError: (err) => log.warn({ err: err.message }, 'tenant status writes: connection lost; listening again'),
  });
}

/** The published status of a tenant, if its workflow has published one. */
export async function readTenantStatus(pool: pg.Pool, name: string): Promise<PublishedTenant | undefined> {
  const { rows } = await pool.query<
    { uid: string; status: Partial<TenantStatus> } & Pick<
      TenantStatus,
      'generation' | 'observedGeneration' | 'phase' | 'conditions' | 'resources' | 'steps'
    >
  >(
    `SELECT uid, generation, observed_generation AS "observedGeneration", phase, conditions, resources, steps, status
       FROM tenant_status WHERE name = $1`,
    [name],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { uid, status, ...columns } = row;
  return { uid, status: { currentStep: 'queued', ...status, ...columns, name } as TenantStatus };
}
