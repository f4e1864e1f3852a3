/**
 * The records of restores as new, separate tenants (staging copies): a request reserves the copy's
 * name (`<source>-r<hex>`), subdomain and `tenants` row and records it in `tenant_restores` with the
 * backup it came from, one restore of a tenant at a time; then its state (restoring, ready until
 * when, failed and why, torn down) and whether it is kept.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { tenantHostname } from '../erp/tenant-database.js';
import { BackupNotFoundError, findBackup, type StoredBackup } from './backup-catalog.js';
import type { ErpVersion, Tier } from './types.js';

/** A restore of the same tenant is still running. */
export class RestoreConflictError extends Error {
  override name = 'RestoreConflictError';
  constructor(
    readonly source: string,
    readonly running: string,
  ) {
    super(`a restore of tenant "${source}" is already running (${running}); wait for it to finish`);
  }
}

export class RestoreNotFoundError extends Error {
  override name = 'RestoreNotFoundError';
}
/** What the restore workflow needs: the copy's name, host and database, the backup, how long to keep it. */
export interface RestoreRequest {
  name: string;
  source: string;
  host: string;
  database: string;
  tier: Tier;
  erpVersion: ErpVersion;
  backup: StoredBackup;
  keepForMs: number;
}

/**
 * Reserves the copy's name and records the restore as running, in one transaction: a second
 * restore of the same tenant while one runs is refused (RestoreConflictError). The source may be
 * deprovisioned: its backups within retention can still be restored, as a new tenant.
 */
export async function requestRestore(
  pool: pg.Pool,
  opts: { source: string; backupId?: string; tenantDomain: string; keepForMs: number },
): Promise<RestoreRequest> {
  const { rows: tenants } = await pool.query<{
    project_id: number;
    tier: Tier;
    erp_version: ErpVersion;
    owner_email: string;
    owner_name: string;
  }>('SELECT project_id, tier, erp_version, owner_email, owner_name FROM tenants WHERE name = $1', [opts.source]);
  const source = tenants[0];
  if (!source) throw new BackupNotFoundError(`tenant "${opts.source}" does not exist`);
  const backup = await backupToRestore(pool, opts.source, opts.backupId);
  const name = `${opts.source.slice(0, 22).replace(/-+$/, '')}-r${randomBytes(3).toString('hex')}`;
  const host = tenantHostname(name, opts.tenantDomain);
  await recordRunningRestore(pool, opts.source, async (db) => {
    await db.query('INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2)', [name, randomUUID()]);
    await db.query(
      `INSERT INTO tenants (name, project_id, tier, erp_version, owner_email, owner_name)
         VALUES ($1, $2, $3, $4, $5, $6)`,
      [name, source.project_id, source.tier, source.erp_version, source.owner_email, source.owner_name],
    );
    await db.query('INSERT INTO tenant_restores (name, source_tenant, backup_id, host) VALUES ($1, $2, $3, $4)', [
      name,
      opts.source,
      backup.backupId,
      host,
    ]);
  });
  return {
    name,
    source: opts.source,
    host,
    database: host,
    tier: source.tier,
    erpVersion: source.erp_version,
    backup,
    keepForMs: opts.keepForMs,
  };
}

/** The tenant's backup `backupId` (or its latest) within retention, or BackupNotFoundError. */
export async function backupToRestore(pool: pg.Pool, tenant: string, backupId?: string): Promise<StoredBackup> {
  const backup = await findBackup(pool, tenant, backupId);
  if (!backup)
    throw new BackupNotFoundError(
      backupId
        ? `tenant "${tenant}" has no backup "${backupId}" within its retention`
        : `tenant "${tenant}" has no backup within its retention`,
    );
  return backup;
}

/**
 * Runs `record` (the inserts of a restore's records) in one transaction; a restore of `source`
 * still running (copy or in place) makes the partial unique index refuse it: RestoreConflictError.
 */
export async function recordRunningRestore(
  pool: pg.Pool,
  source: string,
  record: (db: pg.PoolClient) => Promise<void>,
): Promise<void> {
  try {
    await withTransaction(pool, record);
  } catch (err) {
    if ((err as { constraint?: string }).constraint !== 'tenant_restores_one_at_a_time') throw err;
    const { rows } = await pool.query<{ name: string }>(
      `SELECT name FROM tenant_restores WHERE source_tenant = $1 AND state = 'restoring'`,
      [source],
    );
    throw new RestoreConflictError(source, rows[0]?.name ?? 'unknown');
  }
}

/** A restore request that could not be started (the workflow did not start): its records go. */
export async function abandonRestore(pool: pg.Pool, name: string): Promise<void> {
  await withTransaction(pool, async (db) => {
    await db.query('DELETE FROM tenant_restores WHERE name = $1', [name]);
    await db.query('DELETE FROM tenants WHERE name = $1', [name]);
    await db.query('DELETE FROM subdomain_reservations WHERE subdomain = $1', [name]);
  });
}

export type RestoreState = 'restoring' | 'ready' | 'failed' | 'torn-down';

/** Records where the restore is (ready: until when a copy is kept; failed: why; in place: its safety backup once taken). */
export async function recordRestoreState(
  pool: pg.Pool,
  opts: { name: string; state: RestoreState; expiresAt?: string; error?: string; safetyBackupId?: string },
): Promise<void> {
  await pool.query(
    `UPDATE tenant_restores
        SET state = $2,
            expires_at = coalesce($3::timestamptz, expires_at),
            error = $4,
            safety_backup_id = coalesce($5, safety_backup_id),
            restored_at = CASE WHEN $2 = 'ready' THEN now() ELSE restored_at END,
            torn_down_at = CASE WHEN $2 = 'torn-down' THEN now() ELSE torn_down_at END
      WHERE name = $1`,
    [opts.name, opts.state, opts.expiresAt ?? null, opts.error ?? null, opts.safetyBackupId ?? null],
  );
}

export type RestoreMode = 'copy' | 'in-place';

export interface RestoreRecord {
  /** The copy (a tenant of its own), or for an in-place restore the staging name it was restored under. */
  name: string;
  mode: RestoreMode;
  sourceTenant: string;
  backupId: string;
  /** In place: the backup taken of what the restore replaced. */
  safetyBackupId: string | null;
  host: string;
  state: RestoreState;
  keep: boolean;
  expiresAt: string | null;
  error: string | null;
  requestedAt: string;
  restoredAt: string | null;
  tornDownAt: string | null;
}

const restoreColumns = `name, mode, source_tenant, backup_id, safety_backup_id, host, state, keep, expires_at, error, requested_at, restored_at, torn_down_at`;
type RestoreRow = {
  name: string;
  mode: RestoreMode;
  source_tenant: string;
  backup_id: string;
  safety_backup_id: string | null;
  host: string;
  state: RestoreState;
  keep: boolean;
  expires_at: Date | null;
  error: string | null;
  requested_at: Date;
  restored_at: Date | null;
  torn_down_at: Date | null;
};
const iso = (d: Date | null) => d?.toISOString() ?? null;
const toRecord = (r: RestoreRow): RestoreRecord => ({
  name: r.name,
  mode: r.mode,
  sourceTenant: r.source_tenant,
  backupId: r.backup_id,
  safetyBackupId: r.safety_backup_id,
  host: r.host,
  state: r.state,
  keep: r.keep,
  expiresAt: iso(r.expires_at),
  error: r.error,
  requestedAt: r.requested_at.toISOString(),
  restoredAt: iso(r.restored_at),
  tornDownAt: iso(r.torn_down_at),
});

export async function getRestore(pool: pg.Pool, name: string): Promise<RestoreRecord | null> {
  const { rows } = await pool.query<RestoreRow>(`SELECT ${restoreColumns} FROM tenant_restores WHERE name = $1`, [
    name,
  ]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listRestores(pool: pg.Pool, source?: string): Promise<RestoreRecord[]> {
  const { rows } = await pool.query<RestoreRow>(
    `SELECT ${restoreColumns} FROM tenant_restores WHERE $1::text IS NULL OR source_tenant = $1 ORDER BY requested_at DESC`,
    [source ?? null],
  );
  return rows.map(toRecord);
}

/** Keeps the copy past its teardown time; the workflow is told by the caller (signal `keep`). */
export async function markRestoreKept(pool: pg.Pool, name: string): Promise<RestoreRecord> {
  const { rows } = await pool.query<RestoreRow>(
    `UPDATE tenant_restores SET keep = true WHERE name = $1 RETURNING ${restoreColumns}`,
    [name],
  );
  if (!rows[0]) throw new RestoreNotFoundError(`no restore named "${name}"`);
  return toRecord(rows[0]);
}
