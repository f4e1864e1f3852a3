/**
 * The restore workflow as its starters see it (workflows/restore-tenant-backup.ts): type name,
 * id, input and the `keep` signal, the in-place restore's; and the backup drill's workflow types and schedules. Types and message names only, so the workflow sandbox bundles it.
 */
import { defineSignal } from '@temporalio/workflow';
import type { InPlaceRestoreRequest } from './restore-in-place.js';
import type { RestoreRequest } from './restore-records.js';
import type { Tier } from './types.js';

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

export const RESTORE_TENANT_IN_PLACE_WORKFLOW = 'restoreTenantInPlace';

export interface RestoreTenantInPlaceResult {
  tenant: string;
  backupId: string;
  /** The backup taken of what the restore replaced. */
  safetyBackupId: string;
}

/** In place, also `restore:<name>` (its staging name `<tenant>-p<hex>`). */
export type RestoreTenantInPlaceWorkflow = (input: InPlaceRestoreRequest) => Promise<RestoreTenantInPlaceResult>;

/** Keep the copy: it is not torn down when its time is up. */
export const keepRestoreSignal = defineSignal('keep');

// ---- the backup drill (workflows/drill-backups.ts) ----

export const DRILL_BACKUPS_WORKFLOW = 'drillBackups';
export const DRILL_TENANT_BACKUP_WORKFLOW = 'drillTenantBackup';
/** One schedule per tier, e.g. `backup-drill-starter`. */
export const drillScheduleId = (tier: Tier) => `backup-drill-${tier}`;
