/**
 * Temporal Schedules for backups: one per tenant (`backup:<tenant>`, every BACKUP_INTERVAL,
 * running the `backupTenant` workflow) and one for the whole platform (`backup-retention`, daily,
 * running `applyRetention('backups')`). Creating and deleting are idempotent.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { describeScheduleIfPresent } from '../../lib/temporal.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import { DAY_MS, ensureIntervalSchedule, type ScheduleOutcome } from '../temporal-schedule.js';
import { APPLY_RETENTION_WORKFLOW } from '../retention-workflow-contract.js';
import { BACKUP_RETENTION_SCHEDULE_ID, BACKUP_TENANT_WORKFLOW, type BackupTenantInput } from './workflow-contract.js';
import { backupScheduleId, tiers, type Tier } from './types.js';
import { DRILL_BACKUPS_WORKFLOW, drillScheduleId } from './restore-workflow-contract.js';

export async function createBackupSchedule(
  client: Client,
  opts: { input: BackupTenantInput; taskQueue: string; everyMs: number },
): Promise<'created' | 'updated' | 'exists'> {
  const scheduleId = backupScheduleId(opts.input.tenant);
  const action = {
    type: 'startWorkflow' as const,
    workflowType: BACKUP_TENANT_WORKFLOW,
    workflowId: scheduleId,
    taskQueue: opts.taskQueue,
    args: [opts.input],
    staticSummary: `Backup of tenant ${opts.input.tenant}: pg_dump of ${opts.input.database} + filestore archive`,
    typedSearchAttributes: [
      { key: searchAttributes.tenant, value: opts.input.tenant },
      { key: searchAttributes.tier, value: opts.input.tier },
    ],
  };
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: opts.everyMs }] },
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
      state: { note: `Backups of tenant ${opts.input.tenant} (kept per the ${opts.input.tier} tier's retention)` },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(scheduleId);
  const current = await handle.describe();
  const currentArgs =
    current.action.type === 'startWorkflow' ? (current.action.args?.[0] as BackupTenantInput | undefined) : undefined;
  if (currentArgs?.tier === opts.input.tier && currentArgs.database === opts.input.database) return 'exists';
  await handle.update((prev) => ({ ...prev, action }));
  return 'updated';
}

export async function deleteBackupSchedule(client: Client, tenant: string): Promise<'deleted' | 'absent'> {
  try {
    await client.schedule.getHandle(backupScheduleId(tenant)).delete();
    return 'deleted';
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return 'absent';
    throw err;
  }
}

export async function backupScheduleExists(client: Client, tenant: string): Promise<boolean> {
  return (await describeScheduleIfPresent(client, backupScheduleId(tenant))) !== undefined;
}

/** The daily retention job; the worker ensures it at start-up. */
export function ensureBackupRetentionSchedule(
  client: Client,
  opts: { taskQueue: string; scheduleId?: string },
): Promise<ScheduleOutcome> {
  return ensureIntervalSchedule(client, {
    scheduleId: opts.scheduleId ?? BACKUP_RETENTION_SCHEDULE_ID,
    everyMs: DAY_MS,
    workflowType: APPLY_RETENTION_WORKFLOW,
    args: ['backups'],
    taskQueue: opts.taskQueue,
    summary: 'Delete stored backups whose tier retention has ended',
    note: 'Backup retention: starter 30 days, pro 90 days, enterprise 365 days (configurable)',
  });
}

/**
 * The backup drills, one schedule per tier (`backup-drill-<tier>`, every BACKUP_DRILL_INTERVAL):
 * each live tenant's latest backup restored into a scratch tenant and compared. Created, or
 * updated when the interval changed; the worker ensures them at start-up.
 */
export async function ensureBackupDrillSchedules(
  client: Client,
  opts: { taskQueue: string; everyMs: number; tiers?: readonly Tier[] },
): Promise<Record<string, ScheduleOutcome>> {
  const outcomes: Record<string, ScheduleOutcome> = {};
  for (const tier of opts.tiers ?? tiers)
    outcomes[drillScheduleId(tier)] = await ensureIntervalSchedule(client, {
      scheduleId: drillScheduleId(tier),
      everyMs: opts.everyMs,
      workflowType: DRILL_BACKUPS_WORKFLOW,
      taskQueue: opts.taskQueue,
      args: [{ tier }],
      summary: `Backup drill of the ${tier} tenants: restore each latest backup into a scratch tenant and compare`,
      note: `Backup drill (${tier}): a restore of every live tenant's latest backup, compared and torn down`,
      searchAttributes: [{ key: searchAttributes.tier, value: tier }],
    });
  return outcomes;
}
