/**
 * A Temporal Schedule that starts one workflow on an interval: the worker ensures each of its
 * schedules at start-up. One that already exists (made by an earlier start) stays as it is, unless
 * the configuration changed its interval or task queue since: then it is updated to this one.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import type { Duration, SearchAttributePair } from '@temporalio/common';

export const DAY_MS = 24 * 3600_000;

export interface IntervalSchedule {
  scheduleId: string;
  /** How often, in milliseconds. */
  everyMs: number;
  /** Where in each interval it falls (so that many schedules of one interval do not all start at once). */
  offsetMs?: number;
  workflowType: string;
  taskQueue: string;
  /** The workflow's arguments (none by default). */
  args?: unknown[];
  /** What one run does (the workflow's static summary in the Temporal UI). */
  summary: string;
  /** Why the schedule exists, with the setting that shapes it (the schedule's note). */
  note: string;
  searchAttributes?: SearchAttributePair[];
  /** How late a missed run may still start (Temporal's default: one minute). */
  catchupWindow?: Duration;
}

export type ScheduleOutcome = 'created' | 'updated' | 'exists';

/** Creates the schedule, or brings an existing one to this interval, workflow and task queue; a run still going when the next is due is skipped. */
export async function ensureIntervalSchedule(client: Client, s: IntervalSchedule): Promise<ScheduleOutcome> {
  const spec = { intervals: [{ every: s.everyMs, ...(s.offsetMs !== undefined && { offset: s.offsetMs }) }] };
  try {
    await client.schedule.create(scheduleOptions(s, spec));
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(s.scheduleId);
  const described = await handle.describe();
  const current = described.spec.intervals?.[0];
  const args = s.args ?? [];
  const sameAction =
    described.action.type === 'startWorkflow' &&
    described.action.workflowType === s.workflowType &&
    JSON.stringify(described.action.args ?? []) === JSON.stringify(args);
  if (current && Number(current.every) === s.everyMs && described.action.taskQueue === s.taskQueue && sameAction)
    return 'exists';
  await handle.update((prev) => ({
    ...prev,
    spec,
    action: { ...prev.action, workflowType: s.workflowType, args, taskQueue: s.taskQueue },
  }));
  return 'updated';
}

function scheduleOptions(s: IntervalSchedule, spec: ScheduleOptions['spec']): ScheduleOptions {
  return {
    scheduleId: s.scheduleId,
    spec,
    action: {
      type: 'startWorkflow',
      workflowType: s.workflowType,
      workflowId: s.scheduleId,
      taskQueue: s.taskQueue,
      args: s.args ?? [],
      staticSummary: s.summary,
      ...(s.searchAttributes && { typedSearchAttributes: s.searchAttributes }),
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, ...(s.catchupWindow && { catchupWindow: s.catchupWindow }) },
    state: { note: s.note },
  };
}
