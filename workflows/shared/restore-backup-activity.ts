import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';

/**
 * The restore of a backup, as every restore workflow runs it: the object store down is waited out
 * (attempts every minute at most); a corrupt object fails the restore at once.
 */
export const { restoreBackup } = proxyActivities<Activities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '10 minutes',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['BackupCorrupt'],
  },
});
