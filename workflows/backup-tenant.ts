import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { BackupTenantInput } from '../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

const { createTenantBackup } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/**
 * One backup of a tenant, started by its schedule `backup:<tenant>`: `pg_dump` of the tenant
 * database plus a tar.gz of its filestore into BACKUP_ROOT/<tenant>/, kept for the tier's retention.
 */
export async function backupTenant(input: BackupTenantInput) {
  upsertSearchAttributes([
    { key: searchAttributes.tenant, value: input.tenant },
    { key: searchAttributes.currentStep, value: 'backup' },
  ]);
  // the run's start time names the files, so a retried attempt replaces its own files
  const stamp = workflowInfo().runStartTime.toISOString();
  const result = await createTenantBackup.executeWithOptions(
    {
      startToCloseTimeout: '30 minutes',
      retry: { maximumAttempts: 10 },
      summary: `pg_dump ${input.database} + filestore archive`,
    },
    [{ ...input, stamp }],
  );
  upsertSearchAttributes([{ key: searchAttributes.currentStep, value: 'done' }]);
  return result;
}
