/**
 * Starting a restore (ops API, CLI): the request recorded (domain/tenants/restores.ts), then the
 * workflow `restore:<name>` started; errors in the caller's terms (404 no backup, 409 one running).
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import {
  keepRestoreSignal,
  RESTORE_TENANT_BACKUP_WORKFLOW,
  restoreWorkflowId,
  type RestoreTenantBackupWorkflow,
} from './restore-workflow-contract.js';
import { BackupNotFoundError } from './backup-catalog.js';
import {
  abandonRestore,
  getRestore,
  markRestoreKept,
  requestRestore,
  RestoreConflictError,
  RestoreNotFoundError,
  type RestoreRecord,
} from './restore-records.js';

export interface RestoreDeps {
  pool: pg.Pool;
  temporal: Client;
  taskQueue: string;
  tenantDomain: string;
}

export async function startRestore(
  deps: RestoreDeps,
  opts: { source: string; backupId?: string; keepForMs: number },
): Promise<{ restore: RestoreRecord; workflowId: string }> {
  const request = await requestRestore(deps.pool, { ...opts, tenantDomain: deps.tenantDomain }).catch((err) => {
    if (err instanceof BackupNotFoundError) throw new AppError('NOT_FOUND', err.message);
    if (err instanceof RestoreConflictError) throw new AppError('CONFLICT', err.message, { running: err.running });
    throw err;
  });
  const workflowId = restoreWorkflowId(request.name);
  try {
    await deps.temporal.workflow.start<RestoreTenantBackupWorkflow>(RESTORE_TENANT_BACKUP_WORKFLOW, {
      workflowId,
      taskQueue: deps.taskQueue,
      args: [request],
      staticSummary: `Restore backup ${request.backup.backupId} of ${request.source} as ${request.name} (${request.host})`,
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: request.source },
        { key: searchAttributes.tier, value: request.tier },
      ],
    });
  } catch (err) {
    await abandonRestore(deps.pool, request.name);
    throw err;
  }
  return { restore: (await getRestore(deps.pool, request.name))!, workflowId };
}

/** Keeps the copy past its teardown time. */
export async function keepRestore(deps: RestoreDeps, name: string): Promise<RestoreRecord> {
  const existing = await getRestore(deps.pool, name);
  if (!existing) throw new AppError('NOT_FOUND', `no restore named "${name}"`);
  if (existing.state !== 'restoring' && existing.state !== 'ready')
    throw new AppError('CONFLICT', `restore "${name}" is ${existing.state}: there is nothing left to keep`);
  const kept = await markRestoreKept(deps.pool, name).catch((err) => {
    if (err instanceof RestoreNotFoundError) throw new AppError('NOT_FOUND', err.message);
    throw err;
  });
  await deps.temporal.workflow.getHandle(restoreWorkflowId(name)).signal(keepRestoreSignal);
  return kept;
}
