/**
 * Restoring a backup in place: into the tenant itself, replacing its database and filestore folder.
 * Only for a cancelled tenant or on explicit confirmation (the tenant's name). The backup is first
 * restored under a reserved staging name (`<tenant>-p<hex>`: its own database and folder, never
 * routed), so the tenant keeps serving what it had until the switch; the switch renames the
 * tenant's database and folder aside (`<tenant>-o<hex>`) and the staging ones into their place,
 * then what was replaced is dropped (a safety backup of it was taken first).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { rename, stat } from 'node:fs/promises';
import pg from 'pg';
import { dropTenantDatabase, tenantDatabaseExists, tenantHostname } from '../erp/tenant-database.js';
import type { StoredBackup } from './backup-catalog.js';
import { erpFilestorePath, type ErpFilestoreSettings } from './filestore.js';
import { routeOfTenant } from './http-routes.js';
import { backupToRestore, recordRunningRestore } from './restore-records.js';
import type { ErpVersion, TenantPhase, Tier } from './types.js';

/** The tenant cannot be restored in place now (not cancelled and not confirmed, not provisioned, deprovisioned). */
export class InPlaceRestoreRefusedError extends Error {
  override name = 'InPlaceRestoreRefusedError';
  constructor(
    message: string,
    readonly kind: 'conflict' | 'bad-confirmation',
  ) {
    super(message);
  }
}

/** A database and filestore folder under a reserved name. */
export interface NamedPlace {
  name: string;
  database: string;
}

/** What the in-place restore workflow needs. */
export interface InPlaceRestoreRequest {
  /** The restore's name: its staging name. */
  name: string;
  tenant: string;
  tier: Tier;
  erpVersion: ErpVersion;
  /** The tenant's database (= its host). */
  database: string;
  host: string;
  staging: NamedPlace;
  replaced: NamedPlace;
  backup: StoredBackup;
}

const PHASES_IN_PLACE: TenantPhase[] = ['Ready', 'Unavailable', 'Cancelled'];

/**
 * Checks that the tenant may be restored in place (cancelled, or `confirm` is its name), reserves
 * the staging and set-aside names and records the restore as running, in one transaction: a
 * second restore of the tenant while one runs is refused (RestoreConflictError).
 */
export async function requestInPlaceRestore(
  pool: pg.Pool,
  opts: { tenant: string; backupId?: string; confirm?: string; tenantDomain: string },
): Promise<InPlaceRestoreRequest> {
  const { tenant } = opts;
  const { rows } = await pool.query<{ tier: Tier; erp_version: ErpVersion; phase: TenantPhase | null }>(
    `SELECT t.tier, t.erp_version, c.phase FROM tenants t LEFT JOIN tenant_status c ON c.name = t.name WHERE t.name = $1`,
    [tenant],
  );
  const row = rows[0];
  if (!row) throw new InPlaceRestoreRefusedError(`tenant "${tenant}" does not exist`, 'conflict');
  if (opts.confirm !== undefined && opts.confirm !== tenant)
    throw new InPlaceRestoreRefusedError(
      `must be the tenant's name ("${tenant}"), not "${opts.confirm}"`,
      'bad-confirmation',
    );
  if (!row.phase || !PHASES_IN_PLACE.includes(row.phase))
    throw new InPlaceRestoreRefusedError(
      `tenant "${tenant}" is ${row.phase ?? 'not provisioned'}: only a Ready, Unavailable or Cancelled tenant can be restored in place` +
        (row.phase === 'Deprovisioned' ? '; restore its backup as a new tenant instead' : ''),
      'conflict',
    );
  if (row.phase !== 'Cancelled' && opts.confirm === undefined)
    throw new InPlaceRestoreRefusedError(
      `tenant "${tenant}" is ${row.phase}: restoring it in place replaces its data; cancel it first, or confirm it: body.confirm "${tenant}"`,
      'conflict',
    );
  const backup = await backupToRestore(pool, tenant, opts.backupId);
  const route = await routeOfTenant(pool, tenant);
  const host = route?.host ?? tenantHostname(tenant, opts.tenantDomain);
  const hex = randomBytes(3).toString('hex');
  const place = (letter: string) => {
    const name = `${tenant.slice(0, 22).replace(/-+$/, '')}-${letter}${hex}`;
    return { name, database: tenantHostname(name, opts.tenantDomain) };
  };
  const request: InPlaceRestoreRequest = {
    name: place('p').name,
    tenant,
    tier: row.tier,
    erpVersion: row.erp_version,
    database: route?.database ?? host,
    host,
    staging: place('p'),
    replaced: place('o'),
    backup,
  };
  await recordRunningRestore(pool, tenant, async (db) => {
    for (const { name } of [request.staging, request.replaced])
      await db.query('INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2)', [name, randomUUID()]);
    await db.query(
      `INSERT INTO tenant_restores (name, mode, source_tenant, backup_id, host) VALUES ($1, 'in-place', $2, $3, $4)`,
      [request.name, tenant, backup.backupId, host],
    );
  });
  return request;
}

const exists = (dir: string) =>
  stat(dir).then(
    () => true,
    () => false,
  );

/** Renames a database, its connections ended first (a rename needs it unused). */
async function renameDatabase(admin: pg.Pool, from: string, to: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [from]);
    try {
      await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(from)} RENAME TO ${pg.escapeIdentifier(to)}`);
      return;
    } catch (err) {
      // "database is being accessed by other users": a client came back in between
      if ((err as { code?: string }).code !== '55006' || attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * The switch: the tenant's database and folder set aside under the `replaced` name, the staging
 * ones renamed into their place. Idempotent: a retried attempt finishes what an earlier one began.
 */
export async function switchInPlace(
  deps: { admin: pg.Pool; filestores: ErpFilestoreSettings },
  opts: { tenant: string; database: string; staging: NamedPlace; replaced: NamedPlace },
): Promise<void> {
  const { admin, filestores } = deps;
  if (await tenantDatabaseExists(admin, opts.staging.database)) {
    if (await tenantDatabaseExists(admin, opts.replaced.database))
      // the tenant's own database is already set aside: one under its name now was made meanwhile
      // (e.g. by a reconcile between the renames), with nothing of the tenant's in it
      await dropTenantDatabase(admin, opts.database);
    else if (await tenantDatabaseExists(admin, opts.database))
      await renameDatabase(admin, opts.database, opts.replaced.database);
    await renameDatabase(admin, opts.staging.database, opts.database);
  }
  const live = erpFilestorePath(filestores, opts.tenant, opts.database);
  const staged = erpFilestorePath(filestores, opts.staging.name, opts.staging.database);
  if (await exists(staged)) {
    if (await exists(live))
      await rename(live, erpFilestorePath(filestores, opts.replaced.name, opts.replaced.database));
    await rename(staged, live);
  }
}

/** The reserved staging and set-aside names are released once their database and folder are gone. */
export async function releaseInPlaceNames(pool: pg.Pool, names: string[]): Promise<void> {
  await pool.query('DELETE FROM subdomain_reservations WHERE subdomain = ANY($1)', [names]);
}
