/** The daily Temporal Schedule of the execution-log retention; the worker ensures it at start-up. */
import type { Client } from '@temporalio/client';
import { ensureIntervalSchedule } from '../temporal-schedule.js';

export const EXECUTION_LOG_RETENTION_SCHEDULE_ID = 'execution-log-retention';

export function ensureExecutionLogRetentionSchedule(
  client: Client,
  opts: { taskQueue: string; retentionDays: number; scheduleId?: string },
): Promise<'created' | 'exists'> {
  return ensureIntervalSchedule(client, {
    scheduleId: opts.scheduleId ?? EXECUTION_LOG_RETENTION_SCHEDULE_ID,
    every: '1 day',
    workflowType: 'pruneExecutionLog',
    taskQueue: opts.taskQueue,
    summary: `Drop execution-log day partitions older than ${opts.retentionDays} days`,
    note: `Execution log of Workspace API calls: ${opts.retentionDays}-day retention (§8)`,
  });
}
