/**
 * The backup drill: a tenant's latest backup restored into a scratch tenant (a reserved name
 * `<tenant>-d<hex>`, its own database and filestore folder; routed only while its dashboards are
 * read through the ERP, `tenant_drill_scratches` keeping the ERP jobs away), measured as the backup
 * was when it was taken (backup-figures.ts), compared, torn down, and the outcome recorded in
 * `tenant_backup_drills` (last drill, outcome, duration per tenant).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { ObjectStore } from '../../lib/object-store.js';
import { readDashboardSnapshot, type DashboardSnapshot } from '../erp/dashboard-snapshot.js';
import { databaseUrl, dropTenantDatabase, tenantHostname } from '../erp/tenant-database.js';
import { withTransaction } from '../../lib/db.js';
import { createTableRouteDriver, routedTenants } from './http-routes.js';
import { compareFigures, countMainModels, listFiles, type BackupFigures } from './backup-figures.js';
import { erpFilestorePath, wipeFilestore } from './filestore.js';
import { findBackup } from './backup-catalog.js';
import { restoreBackupInto } from './restores.js';
import { routeNamespace, type ErpVersion, type Tier } from './types.js';

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
      const recorded = await recordedFigures(deps.pool, backup.backupId);
      const restored: BackupFigures = {
        counts: await countsOf(deps.cfg, database),
        files: await listFiles(erpFilestorePath(deps.cfg, scratch, database)),
        dashboards: recorded?.dashboards
          ? await scratchDashboards(deps, { tenant, scratch, database, today: recorded.dashboards.today })
          : null,
      };
      mismatches = recorded
        ? compareFigures(recorded, restored)
        : [`no figures were recorded with backup ${backup.backupId}`];
      outcome = mismatches.length ? 'mismatch' : 'passed';
    } catch (err) {
      error = (err as Error).message;
    } finally {
      await dropTenantDatabase(deps.erpAdmin, database);
      await wipeFilestore(deps.cfg.FILESTORE_ROOT, scratch);
      await rm(erpFilestorePath(deps.cfg, scratch, database), { recursive: true, force: true });
      await releaseScratch(deps.pool, scratch);
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

/**
 * A scratch name no tenant has or can take meanwhile, reserved like a subdomain for the drill's
 * length, with a `tenants` row (its route needs one) listed as a drill's scratch.
 */
async function reserveScratchName(pool: pg.Pool, tenant: string): Promise<string> {
  for (;;) {
    const name = `${tenant.slice(0, 22).replace(/-+$/, '')}-d${randomBytes(3).toString('hex')}`;
    const reserved = await withTransaction(pool, async (db) => {
      const res = await db.query(
        'INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [name, randomUUID()],
      );
      if (!res.rowCount) return false;
      await db.query('INSERT INTO tenant_drill_scratches (name, source_tenant) VALUES ($1, $2)', [name, tenant]);
      await db.query(
        `INSERT INTO tenants (name, project_id, tier, erp_version, owner_email, owner_name)
         SELECT $1, project_id, tier, erp_version, owner_email, owner_name FROM tenants WHERE name = $2`,
        [name, tenant],
      );
      return true;
    });
    if (reserved) return name;
  }
}

/** The scratch's route (cascading from its `tenants` row), rows and reservation go. */
async function releaseScratch(pool: pg.Pool, scratch: string): Promise<void> {
  await withTransaction(pool, async (db) => {
    await db.query('DELETE FROM tenants WHERE name = $1', [scratch]);
    await db.query('DELETE FROM tenant_drill_scratches WHERE name = $1', [scratch]);
    await db.query('DELETE FROM subdomain_reservations WHERE subdomain = $1', [scratch]);
  });
}

/**
 * The restored copy's dashboards as of the backup's day: the scratch routed for the read (signed
 * in as the source's API user, whose key the copy holds), its route removed after.
 */
async function scratchDashboards(
  deps: DrillDeps,
  opts: { tenant: string; scratch: string; database: string; today: string },
): Promise<DashboardSnapshot | null> {
  const { rows } = await deps.pool.query<{ erp_version: ErpVersion }>(
    'SELECT erp_version FROM tenants WHERE name = $1',
    [opts.tenant],
  );
  const erpVersion = rows[0]!.erp_version;
  const routes = createTableRouteDriver(deps.pool);
  const host = opts.database;
  await routes.createRoute({
    host,
    tenant: opts.scratch,
    namespace: routeNamespace(erpVersion),
    database: opts.database,
  });
  try {
    return await readDashboardSnapshot(
      { pool: deps.pool, config: deps.cfg },
      { tenant: opts.tenant, host, database: opts.database, erpVersion, today: opts.today },
    );
  } finally {
    await routes.removeRoute(opts.scratch);
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
  return (await routedTenants(pool, { tier })).map((r) => r.tenant);
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
