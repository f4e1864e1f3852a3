import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { RetentionKind } from '../domain/retention-workflow-contract.js';

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/** Each kind's activity and what a run of it does (its summary in the Temporal UI). */
const RETENTION = {
  'execution-log': {
    run: activities.applyExecutionLogRetention,
    summary: 'Drop execution-log day partitions past the retention; create the next days',
  },
  backups: {
    run: activities.deleteExpiredBackups,
    summary: 'Delete backups past their tier retention (starter 30 d, pro 90 d, enterprise 365 d)',
  },
  'webhook-history': {
    run: activities.applyWebhookRetention,
    summary: 'Delete webhook messages (finished deliveries only) and attempts past the retention',
  },
} satisfies Record<RetentionKind, unknown>;

/** Daily, from the schedules `execution-log-retention`, `backup-retention` and `webhook-retention`. */
export async function applyRetention(kind: RetentionKind): Promise<unknown> {
  const { run, summary } = RETENTION[kind];
  return run.executeWithOptions({ startToCloseTimeout: '10 minutes', summary }, []);
}
