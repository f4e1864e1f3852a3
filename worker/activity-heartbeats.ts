/**
 * Heartbeats for the activities that are given a heartbeat timeout but do not report progress
 * themselves (the quick reconcile steps: workflows/tenant-lifecycle/activities.ts). While an
 * attempt runs, the worker heartbeats for it every few seconds; when the worker dies the heartbeats
 * stop, and Temporal retries the attempt on another worker after the heartbeat timeout instead of
 * the whole start-to-close timeout. An activity that heartbeats itself (with its progress as the
 * details, e.g. a from-scratch install) is left to do so: its details are never overwritten.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** Heartbeat at least this often (the SDK throttles what it sends to the server). */
const MAX_EVERY_MS = 2_000;

export const heartbeatsWhileRunning: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const timeoutMs = ctx.info.heartbeatTimeoutMs;
      if (!timeoutMs || ctx.info.isLocal) return next(input);
      // the context's heartbeat goes through heartbeatFn: note when the activity itself calls it
      const own = ctx as unknown as { heartbeatFn: Context['heartbeat'] };
      const send = own.heartbeatFn;
      let itself = false;
      own.heartbeatFn = (details?: unknown) => {
        itself = true;
        send(details);
      };
      send();
      const timer = setInterval(() => itself || send(), Math.min(MAX_EVERY_MS, timeoutMs / 3));
      try {
        return await next(input);
      } finally {
        clearInterval(timer);
      }
    },
  },
});
