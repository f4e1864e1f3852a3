/**
 * Tenant filestores: one folder per tenant directly under FILESTORE_ROOT. Every path is computed
 * here and checked to stay inside the root, so no tenant name (or bug) can make the platform
 * create or delete anything elsewhere.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

const TENANT = /^[a-z0-9-]{1,30}$/;

export class FilestorePathError extends Error {
  override name = 'FilestorePathError';
}

/** FILESTORE_ROOT/<tenant>, or a FilestorePathError when that would not be a folder directly inside the root. */
export function filestorePath(root: string, tenant: string): string {
  if (!TENANT.test(tenant))
    throw new FilestorePathError(`refusing filestore path for tenant ${JSON.stringify(tenant)}: not a tenant name`);
  const base = path.resolve(root);
  const dir = path.resolve(base, tenant);
  if (path.dirname(dir) !== base)
    throw new FilestorePathError(`refusing ${dir}: it is not a folder directly inside ${base}`);
  return dir;
}

export async function createFilestore(root: string, tenant: string): Promise<{ path: string; created: boolean }> {
  const dir = filestorePath(root, tenant);
  const existed = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  await mkdir(dir, { recursive: true, mode: 0o750 });
  return { path: dir, created: !existed };
}

export async function wipeFilestore(root: string, tenant: string): Promise<{ path: string; wiped: boolean }> {
  const dir = filestorePath(root, tenant);
  const existed = await stat(dir).then(
    () => true,
    () => false,
  );
  await rm(dir, { recursive: true, force: true });
  return { path: dir, wiped: existed };
}

/** What decides where a tenant's ERP keeps its attachments. */
export type ErpFilestoreSettings = { ERP_BACKEND: 'standin' | 'odoo'; FILESTORE_ROOT: string; ODOO_DATA_DIR: string };

const DATABASE = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/**
 * The folder holding the attachments of the tenant's ERP (what a backup archives and a restore
 * fills): real Odoo keeps them under ODOO_DATA_DIR/filestore/<database>, the stand-in's tenant in
 * FILESTORE_ROOT/<tenant>. Checked to stay directly inside its root, like `filestorePath`.
 */
export function erpFilestorePath(cfg: ErpFilestoreSettings, tenant: string, database: string): string {
  if (cfg.ERP_BACKEND !== 'odoo') return filestorePath(cfg.FILESTORE_ROOT, tenant);
  const base = path.resolve(cfg.ODOO_DATA_DIR, 'filestore');
  const dir = path.resolve(base, database);
  if (!DATABASE.test(database) || path.dirname(dir) !== base)
    throw new FilestorePathError(`refusing Odoo filestore path for database ${JSON.stringify(database)}`);
  return dir;
}
