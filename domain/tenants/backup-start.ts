/**
 * A backup now, on an operator's request (`npm run cli -- backup <tenant>`, POST
 * /api/ops/tenants/:name/backups): the tenant's backup schedule's own action (the `backupTenant`
 * workflow with the schedule's input, task queue and search attributes) started at once under a
 * readable id of its own, `backup:<tenant>:manual-<time>`, beside the schedule's
 * `backup:<tenant>-<time>` runs. The backup is stored and listed like a scheduled one, kept for the
 * tier's retention; the schedule's next run is not moved.
 */
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type pg from 'pg';
import { describeScheduleIfPresent } from '../../lib/temporal.js';
import { AppError } from '../../lib/errors.js';
import { BACKUP_TENANT_WORKFLOW, type BackupTenantInput, type BackupTenantWorkflow } from './workflow-contract.js';
import { backupScheduleId } from './types.js';

/** `backup:acme:manual-2026-11-26T10:15:00Z`: the tenant and when it was asked for, to the second. */
export const manualBackupWorkflowId = (tenant: string, at: Date) =>
  `${backupScheduleId(tenant)}:manual-${at.toISOString().replace(/\.\d{3}Z$/, 'Z')}`;

export interface StartedBackup {
  tenant: string;
  workflowId: string;
  runId: string;
  scheduleId: string;
}

/**
 * Starts the backup: 404 for a tenant the platform does not know, 409 for one without a backup
 * schedule (still provisioning, or deprovisioned: its final backup was taken then). Asked twice
 * within the same second, the second answer is the first one's workflow.
 */
export async function startBackupNow(
  deps: { pool: pg.Pool; temporal: Client },
  tenant: string,
  now = new Date(),
): Promise<StartedBackup> {
  const scheduleId = backupScheduleId(tenant);
  const schedule = await describeScheduleIfPresent(deps.temporal, scheduleId);
  if (!schedule || schedule.action.type !== 'startWorkflow') {
    const { rows } = await deps.pool.query<{ phase: string | null }>(
      'SELECT c.phase FROM tenants t LEFT JOIN tenant_status c ON c.name = t.name WHERE t.name = $1',
      [tenant],
    );
    if (!rows[0]) throw new AppError('NOT_FOUND', `Tenant "${tenant}" is not known to the platform.`);
    const phase = rows[0].phase ?? 'not provisioned';
    throw new AppError(
      'CONFLICT',
      `Tenant "${tenant}" has no backup schedule (${scheduleId}) to back it up with: it is ${phase}. A tenant is backed up from when its provisioning has made the schedule until it is deprovisioned (which takes a final backup); \`npm run cli -- backups ${tenant}\` lists what is stored.`,
      { tenant, phase },
    );
  }
  const action = schedule.action;
  const input = action.args?.[0] as BackupTenantInput;
  const workflowId = manualBackupWorkflowId(tenant, now);
  const handle = await deps.temporal.workflow.start<BackupTenantWorkflow>(BACKUP_TENANT_WORKFLOW, {
    workflowId,
    taskQueue: action.taskQueue,
    args: [input],
    staticSummary: `Backup of tenant ${tenant} now, asked for by an operator: pg_dump of ${input.database} + filestore archive`,
    staticDetails: `The action of schedule ${scheduleId}, started at once; the schedule's own runs go on as before.`,
    typedSearchAttributes: action.typedSearchAttributes,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  return { tenant, workflowId, runId: handle.firstExecutionRunId, scheduleId };
}
