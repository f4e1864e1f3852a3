/**
 * Starting a restore (ops API, CLI): the request recorded (restore-records.ts, restore-in-place.ts),
 * then the workflow `restore:<name>` started (in place: as the child of the tenant's lifecycle
 * workflow, which is the only writer of a tenant); errors in the caller's terms (404 no backup, 409
 * one running or the tenant's workflow refusing it).
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
import { InPlaceRestoreRefusedError, requestInPlaceRestore } from './restore-in-place.js';
import { executeTenantUpdate } from './operator-actions.js';
import { restoreInPlaceUpdate } from './workflow-contract.js';
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

/** No backup: 404; a restore of the tenant running: 409 naming it. */
function translateRequestError(err: unknown): unknown {
  if (err instanceof BackupNotFoundError) return new AppError('NOT_FOUND', err.message);
  if (err instanceof RestoreConflictError) return new AppError('CONFLICT', err.message, { running: err.running });
  return err;
}

export async function startRestore(
  deps: RestoreDeps,
  opts: { source: string; backupId?: string; keepForMs: number },
): Promise<{ restore: RestoreRecord; workflowId: string }> {
  const request = await requestRestore(deps.pool, { ...opts, tenantDomain: deps.tenantDomain }).catch((err) => {
    throw translateRequestError(err);
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

/**
 * Starts a restore of the tenant's backup into the tenant itself: 409 unless it is cancelled or
 * `confirm` names it (400 when `confirm` names another), 404 without a backup, 409 while another
 * restore of the tenant runs.
 */
export async function startRestoreInPlace(
  deps: RestoreDeps,
  opts: { tenant: string; backupId?: string; confirm?: string },
): Promise<{ restore: RestoreRecord; workflowId: string }> {
  const request = await requestInPlaceRestore(deps.pool, { ...opts, tenantDomain: deps.tenantDomain }).catch((err) => {
    if (err instanceof InPlaceRestoreRefusedError)
      throw err.kind === 'bad-confirmation'
        ? new AppError('BAD_REQUEST', `body.confirm ${err.message}`, {
            errors: [{ field: 'body.confirm', message: err.message }],
          })
        : new AppError('CONFLICT', err.message);
    throw translateRequestError(err);
  });
  let workflowId: string;
  try {
    // the tenant's lifecycle workflow runs it as its child, and refuses it when it cannot
    workflowId = await executeTenantUpdate(deps.temporal, request.tenant, 'restore in place', (handle) =>
      handle.executeUpdate(restoreInPlaceUpdate, { args: [request] }),
    );
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
  if (existing.mode === 'in-place')
    throw new AppError('CONFLICT', `restore "${name}" was in place: there is no copy to keep`);
  if (existing.state !== 'restoring' && existing.state !== 'ready')
    throw new AppError('CONFLICT', `restore "${name}" is ${existing.state}: there is nothing left to keep`);
  const kept = await markRestoreKept(deps.pool, name).catch((err) => {
    if (err instanceof RestoreNotFoundError) throw new AppError('NOT_FOUND', err.message);
    throw err;
  });
  await deps.temporal.workflow.getHandle(restoreWorkflowId(name)).signal(keepRestoreSignal);
  return kept;
}
