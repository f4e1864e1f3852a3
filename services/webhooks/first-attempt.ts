/**
 * A delivery's first attempt, made by the dispatcher itself: one POST; a failure is handed to the
 * delivery's durable retry workflow (`webhook:<endpointId>:<messageId>`) before the attempt is
 * recorded, so if this process dies in between, the sweeper finds the delivery pending.
 */
import type { Logger } from '../../lib/logger.js';
import type { RecordedAttempt } from '../../domain/webhooks/deliveries.js';
import type { WebhookSender } from '../../domain/webhooks/http-sender.js';
import { webhookHeaders } from '../../domain/webhooks/signing.js';
import { startRetry, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { FirstAttemptJob } from './endpoint-lanes.js';
import type { HandOffThrottle } from './handoff-throttle.js';

export interface FirstAttemptDeps {
  sender: WebhookSender;
  userAgent: string;
  starter: RetryStarter;
  handOffs: HandOffThrottle;
  record: (a: RecordedAttempt) => Promise<void>;
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
  if (result.outcome !== 'ok') {
    // durable before it is recorded: if this process dies now, the sweeper finds the delivery pending
    try {
      await deps.handOffs.run(() =>
        startRetry(deps.starter, {
          endpointId: job.endpoint.id,
          messageId: job.messageId,
          workspaceId: job.endpoint.workspaceId,
          workspace: job.endpoint.workspace,
          eventType: job.eventType,
          trigger: 'retry',
          firstAttempt: {
            outcome: result.outcome,
            statusCode: result.statusCode,
            retryAfterMs: result.retryAfterMs,
            error: result.error,
          },
          failedAt: attemptedAt.getTime() + result.durationMs,
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
  }
  // recorded with the next batch
  void deps.record({ ...recorded, status: result.outcome === 'ok' ? 'delivered' : 'retrying' });
}
