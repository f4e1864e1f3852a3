import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

/**
 * The action of a pair's rotation schedule (`rotate-annual:<caller>:<target>`, domain/service-keys/
 * schedules.ts): starts the pair's next numbered rotation, or records why it skipped this time.
 */
export async function annualServiceKeyRotation(pair: {
  caller: string;
  target: string;
}): Promise<{ workflowId?: string; skipped?: string }> {
  const { beginScheduledRotation } = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
  });
  const result = await beginScheduledRotation.executeWithOptions(
    { summary: `Start the next rotation of ${pair.caller} → ${pair.target}` },
    [pair],
  );
  if (result.skipped) log.info('scheduled rotation skipped', { ...pair, reason: result.skipped });
  return result;
}
