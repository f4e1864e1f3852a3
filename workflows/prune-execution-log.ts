import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

const { applyExecutionLogRetention } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/** Daily (schedule `execution-log-retention`): drops execution-log day partitions past 90 days. */
export async function pruneExecutionLog() {
  return applyExecutionLogRetention.executeWithOptions(
    {
      startToCloseTimeout: '5 minutes',
      summary: 'Drop execution-log day partitions past the retention; create the next days',
    },
    [],
  );
}
