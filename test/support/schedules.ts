/** Running a Temporal Schedule of the worker's on demand, as a test needs one run now rather than at its interval. */
import type { Client } from '@temporalio/client';
import { expect } from 'vitest';

/** Triggers the schedule and waits for the run it starts (the schedule's newest action); that run's result. */
export async function runScheduleNow<T>(client: Client, scheduleId: string): Promise<T> {
  const schedule = client.schedule.getHandle(scheduleId);
  const before = (await schedule.describe()).info.recentActions.length;
  await schedule.trigger();
  let started: { workflowId: string; firstExecutionRunId: string } | undefined;
  await expect
    .poll(
      async () => (started = (await schedule.describe()).info.recentActions.slice(before).at(-1)?.action.workflow),
      {
        timeout: 20_000,
        interval: 200,
      },
    )
    .toBeDefined();
  return client.workflow.getHandle(started!.workflowId, started!.firstExecutionRunId).result() as Promise<T>;
}
