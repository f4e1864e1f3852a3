import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

const { deleteExpiredBackups } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/** Daily (schedule `backup-retention`): deletes stored backups whose tier retention has ended. */
export async function pruneExpiredBackups() {
  return deleteExpiredBackups.executeWithOptions(
    {
      startToCloseTimeout: '10 minutes',
      summary: 'Delete backups past their tier retention (starter 30 d, pro 90 d, enterprise 365 d)',
    },
    [],
  );
}
