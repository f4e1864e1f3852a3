import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

const { sweepErpEvents: sweep } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '1 minute', maximumAttempts: 3 },
});

/**
 * Every ERP_EVENTS_SWEEP_INTERVAL (schedule `erp-events-sweep`): publishes the invoice and payment
 * events the tenant ERPs posted but the platform missed (domain/erp-events/sweep.ts). A tenant
 * whose ERP is away is in the result's `failed` and is read again next time; the run itself only
 * fails when the platform's own database is away for all three attempts.
 */
export async function sweepErpEvents() {
  return sweep.executeWithOptions(
    { summary: 'Publish the invoice/payment events the tenant ERPs posted but the platform missed' },
    [],
  );
}
