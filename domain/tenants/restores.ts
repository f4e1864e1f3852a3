/**
 * Restoring a tenant's backup as a new, separate tenant (a staging copy): its own name
 * (`<source>-r<hex>`), subdomain reservation, `tenants` row, database, filestore folder, route and
 * host, recorded in `tenant_restores` with the backup it came from, and torn down after a while
 * unless kept. The restore itself (objects fetched and checked against their SHA-256, `pg_restore`,
 * the filestore unpacked) happens before anything is routed; one restore of a tenant at a time.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import type { ObjectStore } from '../../lib/object-store.js';
import { databaseUrl, dropTenantDatabase, tenantHostname } from '../erp/tenant-database.js';
import { filestorePath } from './filestore.js';
import type { ErpVersion, Tier } from './types.js';

const run = promisify(execFile);

/** The tenant has no such backup (or none within its retention): nothing to restore. */
export class BackupNotFoundError extends Error {
  override name = 'BackupNotFoundError';
}

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

export interface BackupObject {
  key: string;
  sha256: string;
  sizeBytes: number;
}

/** One backup: the database dump and the filestore archive taken by one run. */
export interface StoredBackup {
  backupId: string;
  tenant: string;
  tier: Tier;
  createdAt: string;
  expiresAt: string;
  database: BackupObject;
  filestore: BackupObject;
}

/** The tenant's backup `backupId`, or its latest, among those in the object store and within retention. */
export async function findBackup(pool: pg.Pool, tenant: string, backupId?: string): Promise<StoredBackup | null> {
  const { rows } = await pool.query<{
    backup_id: string;
    tier: Tier;
    kind: 'database' | 'filestore';
    path: string;
    sha256: string;
    size_bytes: string;
    created_at: Date;
    expires_at: Date;
  }>(
    `SELECT backup_id, tier, kind, path, sha256, size_bytes, created_at, expires_at
       FROM tenant_backups
      WHERE tenant = $1 AND storage = 'object-store' AND expires_at > now()
        AND backup_id = coalesce($2, (SELECT backup_id FROM tenant_backups
                                       WHERE tenant = $1 AND storage = 'object-store' AND expires_at > now()
                                       ORDER BY created_at DESC, id DESC LIMIT 1))`,
    [tenant, backupId ?? null],
  );
  const object = (kind: 'database' | 'filestore') => {
    const row = rows.find((r) => r.kind === kind);
    return row && { key: row.path, sha256: row.sha256, sizeBytes: Number(row.size_bytes) };
  };
  const database = object('database');
  const filestore = object('filestore');
  if (!database || !filestore) return null;
  const first = rows[0]!;
  return {
    backupId: first.backup_id,
    tenant,
    tier: first.tier,
    createdAt: first.created_at.toISOString(),
    expiresAt: first.expires_at.toISOString(),
    database,
    filestore,
  };
}

/** The tenant's backups within retention in the object store, newest first. */
export async function listBackups(pool: pg.Pool, tenant: string): Promise<StoredBackup[]> {
  const { rows } = await pool.query<{ backup_id: string }>(
    `SELECT backup_id FROM tenant_backups
      WHERE tenant = $1 AND storage = 'object-store' AND expires_at > now()
      GROUP BY backup_id ORDER BY max(created_at) DESC`,
    [tenant],
  );
  const backups = await Promise.all(rows.map((r) => findBackup(pool, tenant, r.backup_id)));
  return backups.filter((b): b is StoredBackup => b !== null);
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
  const backup = await findBackup(pool, opts.source, opts.backupId);
  if (!backup)
    throw new BackupNotFoundError(
      opts.backupId
        ? `tenant "${opts.source}" has no backup "${opts.backupId}" within its retention`
        : `tenant "${opts.source}" has no backup within its retention`,
    );
  const name = `${opts.source.slice(0, 22).replace(/-+$/, '')}-r${randomBytes(3).toString('hex')}`;
  const host = tenantHostname(name, opts.tenantDomain);
  try {
    await withTransaction(pool, async (db) => {
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
  } catch (err) {
    if ((err as { constraint?: string }).constraint === 'tenant_restores_one_at_a_time') {
      const { rows } = await pool.query<{ name: string }>(
        `SELECT name FROM tenant_restores WHERE source_tenant = $1 AND state = 'restoring'`,
        [opts.source],
      );
      throw new RestoreConflictError(opts.source, rows[0]?.name ?? 'unknown');
    }
    throw err;
  }
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

/** A restore request that could not be started (the workflow did not start): its records go. */
export async function abandonRestore(pool: pg.Pool, name: string): Promise<void> {
  await withTransaction(pool, async (db) => {
    await db.query('DELETE FROM tenant_restores WHERE name = $1', [name]);
    await db.query('DELETE FROM tenants WHERE name = $1', [name]);
    await db.query('DELETE FROM subdomain_reservations WHERE subdomain = $1', [name]);
  });
}

/**
 * Fetches the backup's objects (each checked against its recorded SHA-256: a mismatch throws
 * ChecksumMismatchError), restores the dump into a fresh database and unpacks the filestore into
 * the copy's folder. Idempotent: a retried attempt starts again from an empty database and folder.
 */
export async function restoreBackupInto(
  deps: { cfg: Config; store: ObjectStore; erpAdmin: pg.Pool },
  opts: { name: string; database: string; backup: StoredBackup },
): Promise<{ databaseBytes: number; filestoreBytes: number }> {
  // a folder no tenant can be named after (tenant backups use BACKUP_ROOT/<tenant>)
  const scratch = path.join(path.resolve(deps.cfg.BACKUP_ROOT), '.restores', opts.name);
  await rm(scratch, { recursive: true, force: true });
  await mkdir(scratch, { recursive: true, mode: 0o750 });
  try {
    const dump = path.join(scratch, 'database.dump');
    const archive = path.join(scratch, 'filestore.tar.gz');
    const database = await deps.store.getFile(opts.backup.database.key, dump, opts.backup.database.sha256);
    const filestore = await deps.store.getFile(opts.backup.filestore.key, archive, opts.backup.filestore.sha256);
    await dropTenantDatabase(deps.erpAdmin, opts.database);
    await deps.erpAdmin.query(`CREATE DATABASE ${pg.escapeIdentifier(opts.database)} TEMPLATE template0`);
    await pgRestore(deps.cfg, opts.database, dump);
    await unpackFilestore(deps.cfg.FILESTORE_ROOT, opts.name, archive);
    return { databaseBytes: database.sizeBytes, filestoreBytes: filestore.sizeBytes };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function pgRestore(cfg: Config, database: string, dump: string): Promise<void> {
  const url = new URL(databaseUrl(cfg.ERP_DATABASE_URL, database));
  const bin = cfg.PG_BIN ? path.join(cfg.PG_BIN, 'pg_restore') : 'pg_restore';
  // the password goes through the environment, never the command line (visible in `ps`)
  await run(
    bin,
    [
      '--no-owner',
      '--no-privileges',
      '--exit-on-error',
      '--host',
      url.hostname,
      '--port',
      url.port || '5432',
      '--username',
      decodeURIComponent(url.username),
      '--dbname',
      database,
      dump,
    ],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) }, maxBuffer: 4 * 1024 * 1024 },
  );
}

/** The archive holds `<source>/…`: its content goes into FILESTORE_ROOT/<name>, emptied first. */
async function unpackFilestore(root: string, name: string, archive: string): Promise<void> {
  const dir = filestorePath(root, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o750 });
  await run('tar', ['-xzf', archive, '-C', dir, '--strip-components=1', '--no-same-owner']);
}

export type RestoreState = 'restoring' | 'ready' | 'failed' | 'torn-down';

/** Records where the restore is (ready: until when it is kept; failed: why). */
export async function recordRestoreState(
  pool: pg.Pool,
  opts: { name: string; state: Exclude<RestoreState, 'restoring'>; expiresAt?: string; error?: string },
): Promise<void> {
  await pool.query(
    `UPDATE tenant_restores
        SET state = $2,
            expires_at = coalesce($3::timestamptz, expires_at),
            error = $4,
            restored_at = CASE WHEN $2 = 'ready' THEN now() ELSE restored_at END,
            torn_down_at = CASE WHEN $2 = 'torn-down' THEN now() ELSE torn_down_at END
      WHERE name = $1`,
    [opts.name, opts.state, opts.expiresAt ?? null, opts.error ?? null],
  );
}

export interface RestoreRecord {
  name: string;
  sourceTenant: string;
  backupId: string;
  host: string;
  state: RestoreState;
  keep: boolean;
  expiresAt: string | null;
  error: string | null;
  requestedAt: string;
  restoredAt: string | null;
  tornDownAt: string | null;
}

const restoreColumns = `name, source_tenant, backup_id, host, state, keep, expires_at, error, requested_at, restored_at, torn_down_at`;
type RestoreRow = {
  name: string;
  source_tenant: string;
  backup_id: string;
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
  sourceTenant: r.source_tenant,
  backupId: r.backup_id,
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
