/**
 * Tenant backups in the object store (BACKUP_S3_*): a `pg_dump` of the tenant database (custom
 * format) plus a tar.gz of its filestore folder, written first to the worker's scratch folder
 * (BACKUP_ROOT/<tenant>/), then stored as `<tier>/<tenant>/<stamp>/{database.dump,filestore.tar.gz}`
 * with their SHA-256, and recorded in `tenant_backups` (both objects together, once both are stored)
 * with the date the tier's retention ends (§8: starter 30 days, pro 90 days, enterprise 365 days by
 * default). Pruning deletes what has expired, objects first, then rows.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { runPgTool } from '../../lib/pg-tools.js';
import type { ObjectStore } from '../../lib/object-store.js';
import { databaseUrl } from '../erp/tenant-database.js';
import { countMainModels, listFiles, steadyDashboards, type BackupFigures } from './backup-figures.js';
import { readDashboardSnapshot, type DashboardSnapshot } from '../erp/dashboard-snapshot.js';
import { isoDay } from '../erp/dashboards.js';
import { routeOfTenant } from './http-routes.js';
import { erpVersionOfNamespace } from './types.js';
import type { Tier } from './types.js';

const run = promisify(execFile);
const TENANT = /^[a-z0-9-]{1,30}$/;

export function retentionDays(
  cfg: Pick<Config, 'BACKUP_RETENTION_STARTER_DAYS' | 'BACKUP_RETENTION_PRO_DAYS' | 'BACKUP_RETENTION_ENTERPRISE_DAYS'>,
  tier: Tier,
): number {
  return {
    starter: cfg.BACKUP_RETENTION_STARTER_DAYS,
    pro: cfg.BACKUP_RETENTION_PRO_DAYS,
    enterprise: cfg.BACKUP_RETENTION_ENTERPRISE_DAYS,
  }[tier];
}

/** BACKUP_ROOT/<tenant>, checked to stay inside the backup root. */
export function tenantBackupDir(root: string, tenant: string): string {
  if (!TENANT.test(tenant))
    throw new Error(`refusing backup folder for tenant ${JSON.stringify(tenant)}: not a tenant name`);
  return path.join(path.resolve(root), tenant);
}

export interface BackupFile {
  kind: 'database' | 'filestore';
  /** The object's key in the backup bucket. */
  path: string;
  sizeBytes: number;
  sha256: string;
  expiresAt: string;
}

export type BackupDeps = { pool: pg.Pool; cfg: Config; store: ObjectStore };

const OBJECT_NAMES = { database: 'database.dump', filestore: 'filestore.tar.gz' } as const;

/**
 * Dumps the tenant database and archives its filestore, stores both in the object store under
 * `<tier>/<tenant>/<stamp>/` and records them, together, once both are stored. `stamp` names the
 * run (e.g. the schedule's workflow start time), so a retried attempt overwrites its own objects
 * instead of adding more; an attempt that fails (the store down) records nothing.
 */
export async function backupTenant(
  deps: BackupDeps,
  opts: { tenant: string; tier: Tier; database: string; filestoreDir: string; stamp: string },
): Promise<{ backupId: string; files: BackupFile[] }> {
  const stamp = opts.stamp.replace(/[^0-9A-Za-z]/g, '');
  const scratch = path.join(tenantBackupDir(deps.cfg.BACKUP_ROOT, opts.tenant), stamp);
  await mkdir(scratch, { recursive: true, mode: 0o750 });
  try {
    const dumpFile = path.join(scratch, OBJECT_NAMES.database);
    const tarFile = path.join(scratch, OBJECT_NAMES.filestore);
    const dashboardsBefore = await dashboardsNow(deps, opts.tenant);
    const counts = await dumpDatabase(deps.cfg, opts.database, dumpFile);
    const dashboards = steadyDashboards(dashboardsBefore, await dashboardsNow(deps, opts.tenant));
    const files = await listFiles(opts.filestoreDir);
    await archiveFolder(opts.filestoreDir, tarFile);

    const backupId = `${opts.tenant}/${stamp}`;
    const prefix = `${opts.tier}/${backupId}`;
    const database = await deps.store.putFile(`${prefix}/${OBJECT_NAMES.database}`, dumpFile);
    const filestore = await deps.store.putFile(`${prefix}/${OBJECT_NAMES.filestore}`, tarFile);
    const recorded = await recordBackup(deps, { ...opts, backupId, figures: { counts, files, dashboards } }, [
      ['database', database],
      ['filestore', filestore],
    ]);
    return { backupId, files: recorded };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The tenant's dashboards as of today, or null (no route or API user, the ERP unreachable): never a reason to fail a backup. */
async function dashboardsNow(deps: BackupDeps, tenant: string): Promise<DashboardSnapshot | null> {
  const route = await routeOfTenant(deps.pool, tenant);
  if (!route) return null;
  return readDashboardSnapshot(
    { pool: deps.pool, config: deps.cfg },
    {
      tenant,
      host: route.host,
      database: route.database,
      erpVersion: erpVersionOfNamespace(route.namespace),
      today: isoDay(new Date()),
    },
  ).catch(() => null);
}

/**
 * `pg_dump` of the database in a snapshot exported by a read-only transaction, in which the main
 * models are counted too: the counts are exactly those of the dump.
 */
async function dumpDatabase(cfg: Config, database: string, file: string): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
  await db.connect();
  try {
    await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const { rows } = await db.query<{ snapshot: string }>('SELECT pg_export_snapshot() AS snapshot');
    const counts = await countMainModels(db);
    await runPgTool('pg_dump', { serverUrl: cfg.ERP_DATABASE_URL, pgBin: cfg.PG_BIN }, [
      '--format=custom',
      '--no-owner',
      `--snapshot=${rows[0]!.snapshot}`,
      `--file=${file}`,
      database,
    ]);
    await db.query('COMMIT');
    return counts;
  } finally {
    await db.end();
  }
}

/** A tar.gz of `dir` (its folder name inside), or an empty archive when there is no such folder. */
async function archiveFolder(dir: string, file: string): Promise<void> {
  const exists = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  const tarArgs = exists
    ? ['-czf', file, '-C', path.dirname(dir), path.basename(dir)]
    : ['-czf', file, '--files-from', '/dev/null'];
  await run('tar', tarArgs);
}

/** Both objects of a backup in one transaction: a backup is listed whole or not at all. */
async function recordBackup(
  deps: BackupDeps,
  opts: { tenant: string; tier: Tier; backupId: string; figures: BackupFigures },
  objects: [BackupFile['kind'], { key: string; sha256: string; sizeBytes: number }][],
): Promise<BackupFile[]> {
  const days = retentionDays(deps.cfg, opts.tier);
  return withTransaction(deps.pool, async (client) => {
    await client.query(
      `INSERT INTO tenant_backup_figures (backup_id, tenant, figures) VALUES ($1, $2, $3)
       ON CONFLICT (backup_id) DO UPDATE SET figures = EXCLUDED.figures`,
      [opts.backupId, opts.tenant, JSON.stringify(opts.figures)],
    );
    const files: BackupFile[] = [];
    for (const [kind, object] of objects) {
      const { rows } = await client.query<{ expires_at: Date }>(
        `INSERT INTO tenant_backups (tenant, tier, kind, path, size_bytes, expires_at, storage, sha256, backup_id)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(days => $6), 'object-store', $7, $8)
         ON CONFLICT (path) DO UPDATE SET size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256
         RETURNING expires_at`,
        [opts.tenant, opts.tier, kind, object.key, object.sizeBytes, days, object.sha256, opts.backupId],
      );
      files.push({
        kind,
        path: object.key,
        sizeBytes: object.sizeBytes,
        sha256: object.sha256,
        expiresAt: rows[0]!.expires_at.toISOString(),
      });
    }
    return files;
  });
}

/**
 * Deletes every backup whose retention has ended (object or file, then row). Returns what was
 * deleted (object keys, or paths of backups kept in the worker's folder before the object store).
 */
export async function deleteExpiredBackups(deps: BackupDeps, now = new Date()): Promise<string[]> {
  const { rows } = await deps.pool.query<{ id: string; path: string; storage: 'local' | 'object-store' }>(
    'SELECT id, path, storage FROM tenant_backups WHERE expires_at <= $1 ORDER BY id',
    [now],
  );
  const root = path.resolve(deps.cfg.BACKUP_ROOT);
  const deleted: string[] = [];
  for (const row of rows) {
    if (row.storage === 'object-store') await deps.store.delete(row.path);
    else {
      // only files inside the backup folder are ever deleted
      if (path.relative(root, path.resolve(row.path)).startsWith('..')) continue;
      await rm(row.path, { force: true });
    }
    await deps.pool.query('DELETE FROM tenant_backups WHERE id = $1', [row.id]);
    deleted.push(row.path);
  }
  return deleted;
}
