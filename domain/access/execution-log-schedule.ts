/** The daily Temporal Schedule of the execution-log retention; the worker ensures it at start-up. */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

export const EXECUTION_LOG_RETENTION_SCHEDULE_ID = 'execution-log-retention';

export async function ensureExecutionLogRetentionSchedule(
  client: Client,
  opts: { taskQueue: string; retentionDays: number; scheduleId?: string },
): Promise<'created' | 'exists'> {
  const scheduleId = opts.scheduleId ?? EXECUTION_LOG_RETENTION_SCHEDULE_ID;
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1 day' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'pruneExecutionLog',
        workflowId: scheduleId,
        taskQueue: opts.taskQueue,
        args: [],
        staticSummary: `Drop execution-log day partitions older than ${opts.retentionDays} days`,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      state: { note: `Execution log of Workspace API calls: ${opts.retentionDays}-day retention (§8)` },
    });
    return 'created';
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) return 'exists';
    throw err;
  }
}
