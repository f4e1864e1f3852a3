/**
 * The worker's activity metrics (lib/metrics.ts): each activity attempt's wait in the task queue
 * (scheduled → started) and its run time by activity type and outcome. The provisioning steps are
 * activities, so their durations and waits are read here (plana_activity_duration_seconds,
 * plana_activity_schedule_to_start_seconds).
 */
import { CancelledFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { activityDuration, activityWait } from '../lib/metrics.js';

/** `completed`, `cancelled` or `failed` (a failed attempt may be retried: each attempt is observed). */
function outcomeOf(err: unknown): 'cancelled' | 'failed' {
  return err instanceof CancelledFailure ? 'cancelled' : 'failed';
}

export const activityMetrics: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const activity = ctx.info.activityType;
      activityWait.observe({ activity }, Math.max(0, Date.now() - ctx.info.currentAttemptScheduledTimestampMs) / 1000);
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      try {
        const result = await next(input);
        activityDuration.observe({ activity, outcome: 'completed' }, seconds());
        return result;
      } catch (err) {
        activityDuration.observe({ activity, outcome: outcomeOf(err) }, seconds());
        throw err;
      }
    },
  },
});
