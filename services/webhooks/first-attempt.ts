/**
 * A delivery's first attempt, made by the dispatcher itself: one POST. A failure is recorded with
 * the time of its first retry (the retry schedule ± jitter, or the receiver's Retry-After) on its
 * endpoint's schedule, and then the endpoint's retry workflow is told (retry-waker.ts); if this
 * process dies in between, the sweeper tells it once the delivery is overdue. A 410 Gone goes to
 * the delivery's own workflow (`webhook:<endpointId>:<messageId>`), which disables the endpoint.
 */
import type { Logger } from '../../lib/logger.js';
import type { RecordedAttempt } from '../../domain/webhooks/deliveries.js';
import type { WebhookSender } from '../../domain/webhooks/http-sender.js';
import { webhookHeaders } from '../../domain/webhooks/signing.js';
import { retryDelay } from '../../domain/webhooks/retry-schedule.js';
import { retrySettings, startRetry, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { FirstAttemptJob } from './endpoint-lanes.js';
import type { HandOffThrottle } from './handoff-throttle.js';
import type { RetryWaker } from './retry-waker.js';

export interface FirstAttemptDeps {
  sender: WebhookSender;
  userAgent: string;
  starter: RetryStarter;
  handOffs: HandOffThrottle;
  waker: RetryWaker;
  /** Answers whether the attempt was recorded. */
  record: (a: RecordedAttempt) => Promise<boolean>;
  log: Logger;
}

/** Makes the attempt; `answered` is called once the endpoint answered (before any hand-off). */
export async function makeFirstAttempt(
  deps: FirstAttemptDeps,
  job: FirstAttemptJob,
  answered: () => void,
): Promise<void> {
  const attemptedAt = new Date();
  const headers = webhookHeaders({
    secrets: job.endpoint.secrets,
    msgId: job.messageId,
    body: job.payload,
    userAgent: deps.userAgent,
  });
  let result;
  try {
    result = await deps.sender.send(job.endpoint.url, headers, job.payload);
  } finally {
    answered();
  }
  const recorded = {
    endpointId: job.endpoint.id,
    messageId: job.messageId,
    trigger: 'dispatcher' as const,
    attemptedAt,
    result,
  };
  if (result.outcome === 'ok') {
    void deps.record({ ...recorded, status: 'delivered' });
    return;
  }
  const delay = retryDelay(retrySettings(deps.starter.config), 0, result, Math.random);
  if (result.outcome === 'gone' || delay === undefined) return handToDeliveryWorkflow(deps, job, recorded);
  const nextAttemptAt = new Date(attemptedAt.getTime() + result.durationMs + delay);
  if (await deps.record({ ...recorded, status: 'retrying', nextAttemptAt })) {
    const { id: endpointId, workspaceId, workspace } = job.endpoint;
    deps.waker.due({ endpointId, workspaceId, workspace }, nextAttemptAt.getTime());
  }
}

/**
 * 410 Gone (or no retry in the schedule): the delivery's own workflow disables the endpoint (or
 * fails the message) and tells the admins; started before the attempt is recorded.
 */
async function handToDeliveryWorkflow(
  deps: FirstAttemptDeps,
  job: FirstAttemptJob,
  recorded: Omit<RecordedAttempt, 'status'>,
): Promise<void> {
  const { result } = recorded;
  try {
    await deps.handOffs.run(() =>
      startRetry(deps.starter, {
        endpointId: job.endpoint.id,
        messageId: job.messageId,
        workspaceId: job.endpoint.workspaceId,
        workspace: job.endpoint.workspace,
        eventType: job.eventType,
        trigger: 'retry',
        failedAt: recorded.attemptedAt.getTime() + result.durationMs,
        firstAttempt: {
          outcome: result.outcome,
          statusCode: result.statusCode,
          retryAfterMs: result.retryAfterMs,
          error: result.error,
        },
      }),
    );
  } catch (err) {
    deps.log.error(
      { err: (err as Error).message, endpointId: job.endpoint.id, messageId: job.messageId },
      'could not start the retry workflow; the sweeper will',
    );
    void deps.record({ ...recorded, status: null });
    return;
  }
  void deps.record({ ...recorded, status: 'retrying' });
}
