/** Backups: the per-tenant schedule, the backup itself (pg_dump + filestore archive) and retention. */
import { Context } from '@temporalio/activity';
import { backupTenant, deleteExpiredBackups } from '../domain/tenants/backups.js';
import { createBackupSchedule, deleteBackupSchedule } from '../domain/tenants/backup-schedules.js';
import { filestorePath } from '../domain/tenants/filestore.js';
import type { BackupTenantInput } from '../domain/tenants/workflow-contract.js';
import type { PlatformDeps } from './deps.js';

export const createTenantBackupActivities = ({ config, temporal, platformPool }: PlatformDeps) => ({
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

  /** pg_dump of the tenant database + tar.gz of its filestore into BACKUP_ROOT/<tenant>/. */
  async createTenantBackup(input: BackupTenantInput & { stamp: string }) {
    Context.current().heartbeat();
    const files = await backupTenant(
      { pool: platformPool, cfg: config },
      { ...input, filestoreDir: filestorePath(config.FILESTORE_ROOT, input.tenant) },
    );
    return { files };
  },

  /** Deletes the stored backups whose tier retention has ended. */
  async deleteExpiredBackups() {
    const deleted = await deleteExpiredBackups({ pool: platformPool, cfg: config });
    return { deleted: deleted.length, paths: deleted };
  },
});
