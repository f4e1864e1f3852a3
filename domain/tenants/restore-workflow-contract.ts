/**
 * The restore workflow as its starters see it (workflows/restore-tenant-backup.ts): type name,
 * id, input and the `keep` signal. Types and message names only, so the workflow sandbox bundles it.
 */
import { defineSignal } from '@temporalio/workflow';
import type { RestoreRequest } from './restores.js';

export const RESTORE_TENANT_BACKUP_WORKFLOW = 'restoreTenantBackup';

/** One workflow per restored copy, named after it (`<source>-r<hex>`). */
export const restoreWorkflowId = (name: string) => `restore:${name}`;

export type RestoreTenantBackupInput = RestoreRequest;

export interface RestoreTenantBackupResult {
  name: string;
  host: string;
  backupId: string;
  outcome: 'kept' | 'torn-down';
}

export type RestoreTenantBackupWorkflow = (input: RestoreTenantBackupInput) => Promise<RestoreTenantBackupResult>;

/** Keep the copy: it is not torn down when its time is up. */
export const keepRestoreSignal = defineSignal('keep');
