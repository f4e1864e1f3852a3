/**
 * Tenant backups in the backup store (BACKUP_ROOT/<tenant>/): a `pg_dump` of the tenant database
 * (custom format) plus a tar.gz of its filestore folder, each recorded in `tenant_backups` with
 * the date its tier's retention ends (§8: starter 30 days, pro 90 days, enterprise 365 days by
 * default). Pruning deletes what has expired, files first, then rows.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
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
  path: string;
  sizeBytes: number;
  expiresAt: string;
}

/**
 * Dumps the tenant database and archives its filestore into BACKUP_ROOT/<tenant>/<stamp>-*.
 * `stamp` names the run (e.g. the schedule's workflow start time), so a retried attempt
 * overwrites its own files instead of adding more.
 */
export async function backupTenant(
  deps: { pool: pg.Pool; cfg: Config },
  opts: { tenant: string; tier: Tier; database: string; filestoreDir: string; stamp: string },
): Promise<BackupFile[]> {
  const dir = tenantBackupDir(deps.cfg.BACKUP_ROOT, opts.tenant);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const stamp = opts.stamp.replace(/[^0-9A-Za-z]/g, '');
  const dumpFile = path.join(dir, `${stamp}-database.dump`);
  const tarFile = path.join(dir, `${stamp}-filestore.tar.gz`);

  const url = new URL(deps.cfg.ERP_DATABASE_URL);
  const pgDump = deps.cfg.PG_BIN ? path.join(deps.cfg.PG_BIN, 'pg_dump') : 'pg_dump';
  // the password goes through the environment, never the command line (visible in `ps`)
  await run(
    pgDump,
    [
      '--format=custom',
      '--no-owner',
      `--file=${dumpFile}`,
      '--host',
      url.hostname,
      '--port',
      url.port || '5432',
      '--username',
      decodeURIComponent(url.username),
      opts.database,
    ],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) }, maxBuffer: 1024 * 1024 },
  );
  const filestoreExists = await stat(opts.filestoreDir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  const tarArgs = filestoreExists
    ? ['-czf', tarFile, '-C', path.dirname(opts.filestoreDir), path.basename(opts.filestoreDir)]
    : ['-czf', tarFile, '--files-from', '/dev/null'];
  await run('tar', tarArgs);

  const days = retentionDays(deps.cfg, opts.tier);
  const files: BackupFile[] = [];
  for (const [kind, file] of [
    ['database', dumpFile],
    ['filestore', tarFile],
  ] as const) {
    const { size } = await stat(file);
    const { rows } = await deps.pool.query<{ expires_at: Date }>(
      `INSERT INTO tenant_backups (tenant, tier, kind, path, size_bytes, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(days => $6))
       ON CONFLICT (path) DO UPDATE SET size_bytes = EXCLUDED.size_bytes
       RETURNING expires_at`,
      [opts.tenant, opts.tier, kind, file, size, days],
    );
    files.push({ kind, path: file, sizeBytes: size, expiresAt: rows[0]!.expires_at.toISOString() });
  }
  return files;
}

/** Deletes every backup whose retention has ended (file, then row). Returns the deleted paths. */
export async function deleteExpiredBackups(deps: { pool: pg.Pool; cfg: Config }, now = new Date()): Promise<string[]> {
  const { rows } = await deps.pool.query<{ id: string; path: string }>(
    'SELECT id, path FROM tenant_backups WHERE expires_at <= $1 ORDER BY id',
    [now],
  );
  const root = path.resolve(deps.cfg.BACKUP_ROOT);
  const deleted: string[] = [];
  for (const row of rows) {
    // only files inside the backup store are ever deleted
    if (path.relative(root, path.resolve(row.path)).startsWith('..')) continue;
    await rm(row.path, { force: true });
    await deps.pool.query('DELETE FROM tenant_backups WHERE id = $1', [row.id]);
    deleted.push(row.path);
  }
  return deleted;
}
