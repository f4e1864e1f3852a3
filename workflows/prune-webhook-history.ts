import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

const { applyWebhookRetention } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/** Daily (schedule `webhook-retention`): deletes webhook messages and attempts past the retention. */
export async function pruneWebhookHistory() {
  return applyWebhookRetention.executeWithOptions(
    {
      startToCloseTimeout: '10 minutes',
      summary: 'Delete webhook messages (finished deliveries only) and attempts past the retention',
    },
    [],
  );
}
