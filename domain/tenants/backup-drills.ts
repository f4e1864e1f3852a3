/**
 * The backup drill: a tenant's latest backup restored into a scratch tenant (a reserved name
 * `<tenant>-d<hex>`, its own database and filestore folder, never routed), measured as the backup
 * was when it was taken (backup-figures.ts), compared, torn down, and the outcome recorded in
 * `tenant_backup_drills` (last drill, outcome, duration per tenant).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { ObjectStore } from '../../lib/object-store.js';
import { databaseUrl, dropTenantDatabase, tenantHostname } from '../erp/tenant-database.js';
import { compareFigures, countMainModels, listFiles, type BackupFigures } from './backup-figures.js';
import { filestorePath, wipeFilestore } from './filestore.js';
import { findBackup } from './backup-catalog.js';
import { restoreBackupInto } from './restores.js';
import type { Tier } from './types.js';

export type DrillOutcome = 'passed' | 'mismatch' | 'failed';

export interface DrillResult {
  tenant: string;
  backupId: string | null;
  outcome: DrillOutcome;
  mismatches: string[];
  error: string | null;
  durationMs: number;
  finishedAt: string;
}

export type DrillDeps = { cfg: Config; pool: pg.Pool; store: ObjectStore; erpAdmin: pg.Pool };

/** Restores the tenant's latest backup into a scratch tenant, compares its figures, tears it down, records the outcome. */
export async function drillLatestBackup(deps: DrillDeps, tenant: string): Promise<DrillResult> {
  const startedAt = new Date();
  const backup = await findBackup(deps.pool, tenant);
  let outcome: DrillOutcome = 'failed';
  let mismatches: string[] = [];
  let error: string | null = null;
  if (!backup) error = `tenant "${tenant}" has no backup within its retention`;
  else {
    const scratch = await reserveScratchName(deps.pool, tenant);
    const database = tenantHostname(scratch, deps.cfg.TENANT_DOMAIN);
    try {
      await restoreBackupInto(deps, { name: scratch, database, backup });
      const restored: BackupFigures = {
        counts: await countsOf(deps.cfg, database),
        files: await listFiles(filestorePath(deps.cfg.FILESTORE_ROOT, scratch)),
      };
      const recorded = await recordedFigures(deps.pool, backup.backupId);
      mismatches = recorded
        ? compareFigures(recorded, restored)
        : [`no figures were recorded with backup ${backup.backupId}`];
      outcome = mismatches.length ? 'mismatch' : 'passed';
    } catch (err) {
      error = (err as Error).message;
    } finally {
      await dropTenantDatabase(deps.erpAdmin, database);
      await wipeFilestore(deps.cfg.FILESTORE_ROOT, scratch);
      await deps.pool.query('DELETE FROM subdomain_reservations WHERE subdomain = $1', [scratch]);
    }
  }
  const durationMs = Date.now() - startedAt.getTime();
  const { rows } = await deps.pool.query<{ finished_at: Date }>(
    `INSERT INTO tenant_backup_drills (tenant, backup_id, outcome, mismatches, error, started_at, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING finished_at`,
    [tenant, backup?.backupId ?? null, outcome, JSON.stringify(mismatches), error, startedAt, durationMs],
  );
  return {
    tenant,
    backupId: backup?.backupId ?? null,
    outcome,
    mismatches,
    error,
    durationMs,
    finishedAt: rows[0]!.finished_at.toISOString(),
  };
}

/** A scratch name no tenant has or can take meanwhile: reserved like a subdomain for the drill's length. */
async function reserveScratchName(pool: pg.Pool, tenant: string): Promise<string> {
  for (;;) {
    const name = `${tenant.slice(0, 22).replace(/-+$/, '')}-d${randomBytes(3).toString('hex')}`;
    const res = await pool.query(
      'INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [name, randomUUID()],
    );
    if (res.rowCount) return name;
  }
}

async function countsOf(cfg: Config, database: string): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
  await db.connect();
  try {
    return await countMainModels(db);
  } finally {
    await db.end();
  }
}

async function recordedFigures(pool: pg.Pool, backupId: string): Promise<BackupFigures | null> {
  const { rows } = await pool.query<{ figures: BackupFigures }>(
    'SELECT figures FROM tenant_backup_figures WHERE backup_id = $1',
    [backupId],
  );
  return rows[0]?.figures ?? null;
}

/** The tenants a tier's drill visits: those with a route (live), restored copies aside. */
export async function drillTenantsOfTier(pool: pg.Pool, tier: Tier): Promise<string[]> {
  const { rows } = await pool.query<{ tenant: string }>(
    `SELECT r.tenant FROM tenant_routes r JOIN tenants t ON t.name = r.tenant
      WHERE t.tier = $1 AND NOT EXISTS (SELECT 1 FROM tenant_restores x WHERE x.name = r.tenant)
      ORDER BY r.tenant`,
    [tier],
  );
  return rows.map((r) => r.tenant);
}

/** The tenant's drills, newest first. */
export async function listDrills(pool: pg.Pool, tenant: string, limit = 20): Promise<DrillResult[]> {
  const { rows } = await pool.query<{
    tenant: string;
    backup_id: string | null;
    outcome: DrillOutcome;
    mismatches: string[];
    error: string | null;
    duration_ms: number;
    finished_at: Date;
  }>(
    `SELECT tenant, backup_id, outcome, mismatches, error, duration_ms, finished_at
       FROM tenant_backup_drills WHERE tenant = $1 ORDER BY finished_at DESC, id DESC LIMIT $2`,
    [tenant, limit],
  );
  return rows.map((r) => ({
    tenant: r.tenant,
    backupId: r.backup_id,
    outcome: r.outcome,
    mismatches: r.mismatches,
    error: r.error,
    durationMs: r.duration_ms,
    finishedAt: r.finished_at.toISOString(),
  }));
}
