/**
 * A Temporal Schedule that starts one workflow on an interval, made once: the worker ensures each
 * of its schedules at start-up, and one that already exists (made by an earlier start) stays as it is.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';

export interface IntervalSchedule {
  scheduleId: string;
  /** How often: a duration string ('1 day') or milliseconds. */
  every: Duration;
  workflowType: string;
  taskQueue: string;
  /** What one run does (the workflow's static summary in the Temporal UI). */
  summary: string;
  /** Why the schedule exists, with the setting that shapes it (the schedule's note). */
  note: string;
}

/** Creates the schedule unless one with its id exists; a run still going when the next is due is skipped. */
export async function ensureIntervalSchedule(client: Client, s: IntervalSchedule): Promise<'created' | 'exists'> {
  try {
    await client.schedule.create({
      scheduleId: s.scheduleId,
      spec: { intervals: [{ every: s.every }] },
      action: {
        type: 'startWorkflow',
        workflowType: s.workflowType,
        workflowId: s.scheduleId,
        taskQueue: s.taskQueue,
        args: [],
        staticSummary: s.summary,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      state: { note: s.note },
    });
    return 'created';
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) return 'exists';
    throw err;
  }
}
