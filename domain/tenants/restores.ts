/**
 * Restoring a backup into a database and filestore folder: the backup's objects fetched and checked
 * against their SHA-256, `pg_restore` into a fresh database, the filestore unpacked. Used by the
 * restore workflow (before anything is routed) and by the drill (into a scratch tenant).
 */
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Config } from '../../lib/config.js';
import { runPgTool } from '../../lib/pg-tools.js';
import type { ObjectStore } from '../../lib/object-store.js';
import { erpAddonsPath, neutralizeErpDatabase } from '../erp/neutralize.js';
import { databaseUrl, dropTenantDatabase } from '../erp/tenant-database.js';
import type { StoredBackup } from './backup-catalog.js';
import { erpFilestorePath } from './filestore.js';

const run = promisify(execFile);

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
    await unpackFilestore(erpFilestorePath(deps.cfg, opts.name, opts.database), archive);
    return { databaseBytes: database.sizeBytes, filestoreBytes: filestore.sizeBytes };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function pgRestore(cfg: Config, database: string, dump: string): Promise<void> {
  await runPgTool('pg_restore', { serverUrl: cfg.ERP_DATABASE_URL, pgBin: cfg.PG_BIN, maxBuffer: 4 * 1024 * 1024 }, [
    '--no-owner',
    '--no-privileges',
    '--exit-on-error',
    '--dbname',
    database,
    dump,
  ]);
}

/** The archive holds `<folder>/…`: its content goes into `dir` (the copy's ERP filestore), emptied first. */
async function unpackFilestore(dir: string, archive: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o750 });
  await run('tar', ['-xzf', archive, '-C', dir, '--strip-components=1', '--no-same-owner']);
}

/** A restored copy's ERP database neutralised by each installed module's script (erp/neutralize.ts); answers those modules. */
export async function neutralizeRestoredCopy(cfg: Config, database: string): Promise<string[]> {
  const addonsPath = erpAddonsPath(cfg);
  const db = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
  await db.connect();
  try {
    return await neutralizeErpDatabase(db, addonsPath);
  } finally {
    await db.end();
  }
}
