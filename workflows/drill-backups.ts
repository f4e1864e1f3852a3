import { executeChild, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { DrillResult } from '../domain/tenants/backup-drills.js';
import type { Tier } from '../domain/tenants/types.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

const { listDrillTenants, alertOperatorsOfDrill } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '5 minutes', maximumAttempts: 20 },
});
/** The drill records its own failure (outcome failed): an attempt is not repeated. */
const { drillLatestBackup } = proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 minutes',
  retry: { maximumAttempts: 3, initialInterval: '30 seconds' },
});

/**
 * A tier's weekly drill (schedule `backup-drill-<tier>`): each live tenant of the tier, one at a
 * time, as a child `drill:<tenant>:<date>`.
 */
export async function drillBackups(input: { tier: Tier }): Promise<DrillResult[]> {
  upsertSearchAttributes([{ key: searchAttributes.tier, value: input.tier }]);
  const tenants = await listDrillTenants.executeWithOptions({ summary: `Live ${input.tier} tenants to drill` }, [
    { tier: input.tier },
  ]);
  const day = workflowInfo().runStartTime.toISOString().slice(0, 10);
  const results: DrillResult[] = [];
  for (const tenant of tenants)
    results.push(
      await executeChild(drillTenantBackup, {
        workflowId: `drill:${tenant}:${day}`,
        args: [{ tenant }],
        staticSummary: `Drill of ${tenant}'s latest backup`,
      }),
    );
  return results;
}

/** One tenant: its latest backup restored into a scratch tenant, compared, torn down; operators alerted unless it passed. */
export async function drillTenantBackup(input: { tenant: string }): Promise<DrillResult> {
  upsertSearchAttributes([{ key: searchAttributes.tenant, value: input.tenant }]);
  const result = await drillLatestBackup.executeWithOptions(
    {
      summary: `Restore the latest backup of ${input.tenant} into a scratch tenant (SHA-256 checked), compare record counts and filestore files with those taken with the backup, tear it down`,
    },
    [{ tenant: input.tenant }],
  );
  if (result.outcome !== 'passed')
    await alertOperatorsOfDrill.executeWithOptions(
      {
        summary: `Alert the operators: the drill of ${input.tenant} ${result.outcome === 'mismatch' ? 'found differences' : 'failed'}`,
      },
      [result],
    );
  return result;
}
