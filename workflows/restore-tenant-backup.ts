import {
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { restoreBackup } from './shared/restore-backup-activity.js';
import {
  keepRestoreSignal,
  type RestoreTenantBackupInput,
  type RestoreTenantBackupResult,
} from '../domain/tenants/restore-workflow-contract.js';
import { routeNamespace } from '../domain/tenants/types.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

const step = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute' },
});

/**
 * A tenant's backup restored as a new tenant (`restore:<name>`), step by step: the backup's objects
 * fetched and checked, restored into the copy's own database and filestore folder, neutralised (a
 * copy sends no e-mail, runs no scheduled actions, posts no webhooks, charges nothing), routed only then,
 * kept for `keepForMs` and torn down unless the `keep` signal arrives. A failure tears down what was
 * made (nothing half-restored stays routed) and fails the workflow.
 */
export async function restoreTenantBackup(input: RestoreTenantBackupInput): Promise<RestoreTenantBackupResult> {
  let keep = false;
  setHandler(keepRestoreSignal, () => {
    keep = true;
  });
  const at = (currentStep: string) =>
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: currentStep }]);
  upsertSearchAttributes([
    { key: searchAttributes.tenant, value: input.source },
    { key: searchAttributes.tier, value: input.tier },
  ]);
  const { name, host, database, backup } = input;
  try {
    at('restore');
    await restoreBackup.executeWithOptions(
      {
        summary: `Fetch backup ${backup.backupId} of ${input.source} (SHA-256 checked), pg_restore into ${database}, unpack its filestore into ${name}`,
      },
      [{ name, database, backup }],
    );
    at('neutralize');
    await step.neutralizeRestoredCopy.executeWithOptions(
      {
        summary: `Neutralise ${database} as Odoo's neutralize does: no e-mail, scheduled actions, webhooks or payments`,
      },
      [{ database }],
    );
    at('route');
    await step.createRoute.executeWithOptions({ summary: `Route ${host} → database ${database}` }, [
      { host, tenant: name, namespace: routeNamespace(input.erpVersion), database },
    ]);
  } catch (err) {
    const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    log.warn('restore failed; tearing down what it made', { name, message });
    await tearDown(input, 'failed', message);
    throw ApplicationFailure.create({
      type: 'RestoreFailed',
      message: `restore of ${backup.backupId} as ${name} failed: ${message}`,
      nonRetryable: true,
    });
  }
  const expiresAt = new Date(Date.now() + input.keepForMs).toISOString();
  await step.recordRestoreState.executeWithOptions(
    { startToCloseTimeout: '2 minutes', summary: `${name} ready at ${host}; torn down at ${expiresAt} unless kept` },
    [{ name, state: 'ready', expiresAt }],
  );
  at('ready');
  const kept = await condition(() => keep, input.keepForMs);
  if (kept) {
    at('kept');
    return { name, host, backupId: backup.backupId, outcome: 'kept' };
  }
  await tearDown(input, 'torn-down');
  return { name, host, backupId: backup.backupId, outcome: 'torn-down' };
}

/** Route first (nothing answers at the host any more), then database and filestore folder. */
async function tearDown(input: RestoreTenantBackupInput, state: 'failed' | 'torn-down', error?: string) {
  upsertSearchAttributes([{ key: searchAttributes.currentStep, value: 'tear-down' }]);
  const { name, database } = input;
  await step.removeRoute.executeWithOptions(
    { startToCloseTimeout: '2 minutes', summary: `Remove the route of ${name}` },
    [{ tenant: name }],
  );
  await step.dropTenantDatabase.executeWithOptions(
    { startToCloseTimeout: '5 minutes', summary: `Drop database ${database}` },
    [{ database }],
  );
  await step.wipeFilestore.executeWithOptions(
    { startToCloseTimeout: '5 minutes', summary: `Delete the filestore folder of ${name}` },
    [{ tenant: name }],
  );
  await step.recordRestoreState.executeWithOptions(
    { startToCloseTimeout: '2 minutes', summary: state === 'failed' ? `${name}: restore failed` : `${name} torn down` },
    [{ name, state, error }],
  );
  upsertSearchAttributes([{ key: searchAttributes.currentStep, value: state }]);
}
