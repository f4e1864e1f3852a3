/** The daily Temporal Schedule of the execution-log retention; the worker ensures it at start-up. */
import type { Client } from '@temporalio/client';
import { APPLY_RETENTION_WORKFLOW } from '../retention-workflow-contract.js';
import { DAY_MS, ensureIntervalSchedule, type ScheduleOutcome } from '../temporal-schedule.js';

export const EXECUTION_LOG_RETENTION_SCHEDULE_ID = 'execution-log-retention';

export function ensureExecutionLogRetentionSchedule(
  client: Client,
  opts: { taskQueue: string; retentionDays: number; scheduleId?: string },
): Promise<ScheduleOutcome> {
  return ensureIntervalSchedule(client, {
    scheduleId: opts.scheduleId ?? EXECUTION_LOG_RETENTION_SCHEDULE_ID,
    everyMs: DAY_MS,
    workflowType: APPLY_RETENTION_WORKFLOW,
    args: ['execution-log'],
    taskQueue: opts.taskQueue,
    summary: `Drop execution-log day partitions older than ${opts.retentionDays} days`,
    note: `Execution log of Workspace API calls: ${opts.retentionDays}-day retention (§8)`,
  });
}
