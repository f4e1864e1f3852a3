/**
 * What the tenant ERPs' SaaS endpoints (§4.7 `/svc/saas/…`) answer, from the platform's own data:
 * the tier catalogue (tiers.ts), the tenant's subscription (subscriptions.ts), and the legacy
 * callbacks (job progress, backup done) kept once each, idempotently.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { subscriptionView, findSubscription, type SubscriptionView } from './subscriptions.js';
import type { Tier } from '../tenants/types.js';

/** The tenant (the platform's registry), its tier (the TenantClient's desired one when there is one) and its workspace. */
export async function requireTenant(
  db: Queryable,
  tenant: string,
): Promise<{ name: string; tier: Tier; workspace: { id: string; slug: string } | null }> {
  const { rows } = await db.query<{ name: string; tier: Tier; workspace_id: string | null; slug: string | null }>(
    `SELECT t.name, coalesce(c.spec->>'tier', t.tier) AS tier, w.id AS workspace_id, w.slug
       FROM tenants t
       LEFT JOIN tenant_status c ON c.name = t.name
       LEFT JOIN workspaces w ON w.id = coalesce(t.workspace_id, (SELECT id FROM workspaces WHERE slug = t.name))
      WHERE t.name = $1`,
    [tenant],
  );
  const row = rows[0];
  if (!row) throw new AppError('NOT_FOUND', `Tenant "${tenant}" does not exist.`);
  return {
    name: row.name,
    tier: row.tier,
    workspace: row.workspace_id && row.slug ? { id: row.workspace_id, slug: row.slug } : null,
  };
}

/** The tenant's subscription when `sub` is its provider subscription id; anything else is unknown here (404). */
export async function tenantSubscription(
  db: Queryable,
  tenant: string,
  sub: string,
): Promise<SubscriptionView & { tenant: string }> {
  const t = await requireTenant(db, tenant);
  const row = t.workspace ? await findSubscription(db, t.workspace.id) : undefined;
  if (!row || row.provider_subscription_id !== sub)
    throw new AppError('NOT_FOUND', `Subscription "${sub}" is not this tenant's.`);
  return { ...subscriptionView(t.workspace!.slug, row), tenant };
}

export type JobState = 'queued' | 'running' | 'done' | 'failed';
const ORDER: Record<JobState, number> = { queued: 0, running: 1, done: 2, failed: 2 };

export interface JobRecord {
  tenant: string;
  job: string;
  state: JobState;
  progress: number;
  message: string;
  updates: number;
  updatedAt: string;
}

/**
 * A job's progress report. Idempotent and ordered: the same report again, or an older one arriving
 * late (an earlier state, less progress), changes nothing (`changed: false`); a finished job
 * (done/failed) never changes its outcome (409).
 */
export async function recordJobUpdate(
  pool: pg.Pool,
  tenant: string,
  job: string,
  update: { state: JobState; progress?: number; message?: string },
): Promise<JobRecord & { changed: boolean }> {
  await requireTenant(pool, tenant);
  return withTransaction(pool, async (db) => {
    const progress = update.progress ?? (update.state === 'done' ? 100 : 0);
    const inserted = await db.query(
      `INSERT INTO saas_jobs (tenant, job_id, state, progress, message) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant, job_id) DO NOTHING RETURNING job_id`,
      [tenant, job, update.state, progress, update.message ?? ''],
    );
    let changed = inserted.rowCount === 1;
    if (!changed) {
      const cur = (
        await db.query<{ state: JobState; progress: number; message: string }>(
          'SELECT state, progress, message FROM saas_jobs WHERE tenant = $1 AND job_id = $2 FOR UPDATE',
          [tenant, job],
        )
      ).rows[0]!;
      const finished = cur.state === 'done' || cur.state === 'failed';
      if (finished && update.state !== cur.state && ORDER[update.state] >= ORDER[cur.state]) {
        throw new AppError('CONFLICT', `Job "${job}" has finished (${cur.state}); it cannot become ${update.state}.`);
      }
      const newer =
        ORDER[update.state] > ORDER[cur.state] || (update.state === cur.state && !finished && progress > cur.progress);
      if (newer) {
        await db.query(
          `UPDATE saas_jobs SET state = $3, progress = $4, message = $5, updates = updates + 1, updated_at = now() WHERE tenant = $1 AND job_id = $2`,
          [tenant, job, update.state, progress, update.message ?? cur.message],
        );
        changed = true;
      }
    }
    const row = (
      await db.query<{ state: JobState; progress: number; message: string; updates: number; updated_at: Date }>(
        'SELECT * FROM saas_jobs WHERE tenant = $1 AND job_id = $2',
        [tenant, job],
      )
    ).rows[0]!;
    return {
      tenant,
      job,
      state: row.state,
      progress: row.progress,
      message: row.message,
      updates: row.updates,
      updatedAt: row.updated_at.toISOString(),
      changed,
    };
  });
}

/** A backup's completion report, kept once per backup id: the same report again is a duplicate; a different outcome for the same backup is a 409. */
export async function recordBackupCallback(
  pool: pg.Pool,
  tenant: string,
  cb: { backupId: string; status: 'done' | 'failed'; sizeBytes?: number },
): Promise<{
  tenant: string;
  backupId: string;
  status: 'done' | 'failed';
  sizeBytes: number | null;
  receivedAt: string;
  duplicate: boolean;
}> {
  await requireTenant(pool, tenant);
  const { rows } = await pool.query<{
    status: 'done' | 'failed';
    size_bytes: string | null;
    received_at: Date;
    inserted: boolean;
  }>(
    `WITH ins AS (
       INSERT INTO saas_backup_callbacks (tenant, backup_id, status, size_bytes) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant, backup_id) DO NOTHING RETURNING status, size_bytes, received_at
     )
     SELECT status, size_bytes, received_at, true AS inserted FROM ins
     UNION ALL
     SELECT status, size_bytes, received_at, false FROM saas_backup_callbacks WHERE tenant = $1 AND backup_id = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [tenant, cb.backupId, cb.status, cb.sizeBytes ?? null],
  );
  // a concurrent first report of the same backup committed while ours waited: read it now
  const row =
    rows[0] ??
    (
      await pool.query<{ status: 'done' | 'failed'; size_bytes: string | null; received_at: Date; inserted: boolean }>(
        'SELECT status, size_bytes, received_at, false AS inserted FROM saas_backup_callbacks WHERE tenant = $1 AND backup_id = $2',
        [tenant, cb.backupId],
      )
    ).rows[0]!;
  if (!row.inserted && row.status !== cb.status) {
    throw new AppError(
      'CONFLICT',
      `Backup "${cb.backupId}" was reported ${row.status} already; it cannot be reported ${cb.status}.`,
    );
  }
  return {
    tenant,
    backupId: cb.backupId,
    status: row.status,
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
    receivedAt: row.received_at.toISOString(),
    duplicate: !row.inserted,
  };
}
