/** Backups: the per-tenant schedule, the backup itself (pg_dump + filestore archive, into the object store) and retention. */
import { Context } from '@temporalio/activity';
import { backupTenant, deleteExpiredBackups } from '../domain/tenants/backups.js';
import { createBackupSchedule, deleteBackupSchedule } from '../domain/tenants/backup-schedules.js';
import { erpFilestorePath } from '../domain/tenants/filestore.js';
import type { BackupTenantInput } from '../domain/tenants/workflow-contract.js';
import type { PlatformDeps } from './deps.js';

const DAY_MS = 24 * 3600_000;

export const createTenantBackupActivities = ({ config, temporal, platformPool, backupStore }: PlatformDeps) => ({
  async createBackupSchedule(input: BackupTenantInput) {
    const outcome = await createBackupSchedule(temporal, {
      input,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      everyMs: config.BACKUP_INTERVAL,
    });
    return { scheduleId: `backup:${input.tenant}`, outcome };
  },

  async deleteBackupSchedule(input: { tenant: string }) {
    return { outcome: await deleteBackupSchedule(temporal, input.tenant) };
  },

  /**
   * pg_dump of the tenant database + tar.gz of its filestore into the object store, recorded once
   * both objects are stored (a failed attempt, e.g. the store down, records nothing and is retried).
   */
  async createTenantBackup(input: BackupTenantInput & { stamp: string }) {
    Context.current().heartbeat();
    return backupTenant(
      { pool: platformPool, cfg: config, store: backupStore },
      { ...input, filestoreDir: erpFilestorePath(config, input.tenant, input.database) },
    );
  },

  /**
   * Deletes the stored backups whose tier retention has ended, and aborts the multipart uploads a
   * backup left unfinished a day ago or more (its retries ran out while the store was away).
   */
  async deleteExpiredBackups() {
    const deleted = await deleteExpiredBackups({ pool: platformPool, cfg: config, store: backupStore });
    const abortedUploads = await backupStore.abortIncompleteUploads({ initiatedBefore: new Date(Date.now() - DAY_MS) });
    return { deleted: deleted.length, paths: deleted, abortedUploads };
  },
});
