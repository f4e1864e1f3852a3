/** Restores of a backup, as a new tenant or in place: the restore itself, the in-place switch and the recorded state. */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { ChecksumMismatchError } from '../lib/object-store.js';
import type { StoredBackup } from '../domain/tenants/backup-catalog.js';
import { releaseInPlaceNames, switchInPlace } from '../domain/tenants/restore-in-place.js';
import { recordRestoreState } from '../domain/tenants/restore-records.js';
import { neutralizeRestoredCopy, restoreBackupInto } from '../domain/tenants/restores.js';
import type { PlatformDeps } from './deps.js';

export const RestoreErrorType = { BackupCorrupt: 'BackupCorrupt' } as const;

export const createTenantRestoreActivities = ({ config, platformPool, erpAdminPool, backupStore }: PlatformDeps) => ({
  /** Objects fetched and verified, pg_restore into a fresh database, the filestore unpacked; a corrupt object is refused for good. */
  async restoreBackup(input: { name: string; database: string; backup: StoredBackup }) {
    Context.current().heartbeat();
    try {
      return await restoreBackupInto({ cfg: config, store: backupStore, erpAdmin: erpAdminPool }, input);
    } catch (err) {
      if (err instanceof ChecksumMismatchError)
        throw ApplicationFailure.create({
          type: RestoreErrorType.BackupCorrupt,
          message: err.message,
          nonRetryable: true,
        });
      throw err;
    }
  },

  /** A copy must not reach the outside world: each installed module's neutralize script run on its ERP database, as `odoo-bin neutralize` does. */
  async neutralizeRestoredCopy(input: { database: string }) {
    return { modules: await neutralizeRestoredCopy(config, input.database) };
  },

  async recordRestoreState(input: Parameters<typeof recordRestoreState>[1]) {
    await recordRestoreState(platformPool, input);
  },

  /** In place: the tenant's database and folder set aside, the restored ones renamed into their place. */
  async switchInPlace(input: Parameters<typeof switchInPlace>[1]) {
    await switchInPlace({ admin: erpAdminPool, filestores: config }, input);
  },

  async releaseInPlaceNames(input: { names: string[] }) {
    await releaseInPlaceNames(platformPool, input.names);
  },
});
