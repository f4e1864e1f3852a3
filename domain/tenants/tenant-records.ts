/**
 * The platform's own records of a tenant (its repository): the subdomain reservation, the
 * `tenants` row the rest of the platform refers to, and the status mirror in `tenant_clients`.
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
 * Mirrors the workflow's status to `tenant_clients` (for `get tenants` and the portal). Only the
 * row of this TenantClient (uid) is written; false when it is not there (yet).
 */
export async function recordTenantStatus(
  pool: pg.Pool,
  input: { name: string; uid: string; status: TenantStatus },
): Promise<boolean> {
  const { status } = input;
  const res = await pool.query(
    `UPDATE tenant_clients
        SET observed_generation = $3, phase = $4, conditions = $5, resources = $6, steps = $7, status = $8, updated_at = now()
      WHERE name = $1 AND uid = $2`,
    [
      input.name,
      input.uid,
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

/** A TenantClient's row as the workflow last mirrored it (the TenantClient controller reads these). */
export interface MirroredTenant {
  name: string;
  /** The generation of the spec last applied (the platform's count, not Kubernetes'). */
  generation: number;
  status: TenantStatus;
}

/**
 * Calls `onWrite` with a TenantClient's name each time its row is written (the spec, or the status
 * its workflow mirrors: migrations/852_tenant_client_write_notices.sql); `onReconnect` when writes
 * may have been missed (the connection was lost and made again).
 */
export function watchTenantStatusWrites(
  databaseUrl: string,
  log: Logger,
  on: { onWrite: (name: string) => void; onReconnect: () => void },
): Promise<ChannelListener> {
  return listenToChannel(databaseUrl, 'tenant_client_writes', {
    onNotice: on.onWrite,
    onReconnect: () => {
      log.info('listening to TenantClient writes again');
      on.onReconnect();
    },
    onError: (err) => log.warn({ err: err.message }, 'TenantClient writes: connection lost; listening again'),
  });
}

/** The mirrored status of each named TenantClient that has a row (one query for all). */
export async function readMirroredStatuses(pool: pg.Pool, names: string[]): Promise<Map<string, MirroredTenant>> {
  const { rows } = await pool.query<{
    name: string;
    generation: number;
    observed_generation: number;
    phase: TenantStatus['phase'];
    conditions: TenantStatus['conditions'];
    resources: TenantStatus['resources'];
    steps: TenantStatus['steps'];
    status: Partial<TenantStatus>;
  }>(
    `SELECT name, generation, observed_generation, phase, conditions, resources, steps, status
       FROM tenant_clients WHERE name = ANY($1)`,
    [names],
  );
  return new Map(
    rows.map((r) => [
      r.name,
      {
        name: r.name,
        generation: r.generation,
        status: {
          currentStep: 'queued',
          ...r.status,
          name: r.name,
          generation: r.generation,
          observedGeneration: r.observed_generation,
          phase: r.phase,
          conditions: r.conditions,
          resources: r.resources,
          steps: r.steps,
        } as TenantStatus,
      },
    ]),
  );
}
