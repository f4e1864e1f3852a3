/**
 * The backups a tenant has in the object store within its retention (`tenant_backups`, storage
 * `object-store`): one backup is its database dump and its filestore archive, each with the key and
 * SHA-256 it was stored with. What a restore or a drill starts from.
 */
import type pg from 'pg';
import type { Tier } from './types.js';

/** The tenant has no such backup (or none within its retention): nothing to restore. */
export class BackupNotFoundError extends Error {
  override name = 'BackupNotFoundError';
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
