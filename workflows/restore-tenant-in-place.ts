import { ApplicationFailure, log, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { restoreBackup } from './shared/restore-backup-activity.js';
import type { InPlaceRestoreRequest } from '../domain/tenants/restore-in-place.js';
import type { RestoreTenantInPlaceResult } from '../domain/tenants/restore-workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

/** The safety backup: the store down is waited out the same way. */
const { createTenantBackup } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
const step = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute' },
});

/**
 * A backup restored into the tenant itself (`restore:<tenant>-p<hex>`), step by step: a safety
 * backup of what it holds now, the backup restored under the staging name (never routed: the
 * tenant keeps serving its own data meanwhile), the switch (database and folder renamed into
 * place), what was replaced dropped. A failure before the switch leaves the tenant as it was and
 * removes the staging database and folder.
 */
export async function restoreTenantInPlace(input: InPlaceRestoreRequest): Promise<RestoreTenantInPlaceResult> {
  const at = (currentStep: string) =>
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: currentStep }]);
  upsertSearchAttributes([
    { key: searchAttributes.tenant, value: input.tenant },
    { key: searchAttributes.tier, value: input.tier },
  ]);
  const { name, tenant, database, staging, replaced, backup } = input;
  let safetyBackupId: string;
  try {
    at('safety-backup');
    // the run's start time names the safety backup's objects, so a retried attempt replaces its own
    const safety = await createTenantBackup.executeWithOptions(
      { summary: `Safety backup of ${tenant} as it is now (pg_dump ${database} + filestore archive)` },
      [{ tenant, tier: input.tier, database, stamp: workflowInfo().runStartTime.toISOString() }],
    );
    safetyBackupId = safety.backupId;
    await step.recordRestoreState.executeWithOptions({ summary: `Safety backup ${safetyBackupId} taken` }, [
      { name, state: 'restoring', safetyBackupId },
    ]);
    at('restore');
    await restoreBackup.executeWithOptions(
      {
        summary: `Fetch backup ${backup.backupId} (SHA-256 checked), pg_restore into ${staging.database}, unpack its filestore into ${staging.name}; ${tenant} still serves its own data`,
      },
      [{ name: staging.name, database: staging.database, backup }],
    );
  } catch (err) {
    const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    log.warn('in-place restore failed before the switch; the tenant is as it was', { tenant, message });
    await removePlace(staging);
    await step.releaseInPlaceNames.executeWithOptions({ summary: `Release ${staging.name} and ${replaced.name}` }, [
      { names: [staging.name, replaced.name] },
    ]);
    await step.recordRestoreState.executeWithOptions({ summary: `${tenant}: restore failed, nothing replaced` }, [
      { name, state: 'failed', error: message },
    ]);
    at('failed');
    throw ApplicationFailure.create({
      type: 'RestoreFailed',
      message: `in-place restore of ${backup.backupId} into ${tenant} failed, nothing was replaced: ${message}`,
      nonRetryable: true,
    });
  }
  at('switch');
  await step.switchInPlace.executeWithOptions(
    {
      summary: `Switch: ${database} and the filestore of ${tenant} set aside as ${replaced.name}, the restored ones renamed into their place`,
    },
    [{ tenant, database, staging, replaced }],
  );
  at('clean-up');
  await removePlace(replaced);
  await step.releaseInPlaceNames.executeWithOptions({ summary: `Release ${staging.name} and ${replaced.name}` }, [
    { names: [staging.name, replaced.name] },
  ]);
  await step.recordRestoreState.executeWithOptions(
    { summary: `${tenant} restored from ${backup.backupId} (what it replaced: backup ${safetyBackupId})` },
    [{ name, state: 'ready' }],
  );
  at('done');
  return { tenant, backupId: backup.backupId, safetyBackupId };
}

/** Drops a reserved name's database and deletes its filestore folder. */
async function removePlace(place: { name: string; database: string }) {
  await step.dropTenantDatabase.executeWithOptions({ summary: `Drop database ${place.database}` }, [
    { database: place.database },
  ]);
  await step.wipeFilestore.executeWithOptions({ summary: `Delete the filestore folder of ${place.name}` }, [
    { tenant: place.name },
  ]);
}
