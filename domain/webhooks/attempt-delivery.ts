/**
 * One webhook attempt, the same for the dispatcher's first attempt and every retry: the signed
 * headers, the POST, the outcome classified, and the due time of the next retry. It answers the
 * attempt as it is to be recorded; the caller records it (the dispatcher in its group commit, a
 * retry batch in one statement).
 *
 * After the attempt the delivery is `delivered` (2xx), `failed` (410 Gone, or no retry left in the
 * schedule) or `retrying` with `nextAttemptAt`: the schedule's wait for the attempts made so far
 * (± jitter), or the receiver's Retry-After within its clamp, counted from the answer.
 */
import type { Config } from '../../lib/config.js';
import { inChildSpan } from '../../lib/tracing.js';
import type { SendingEndpoint } from './endpoints.js';
import type { RecordedAttempt, Trigger } from './deliveries.js';
import type { AttemptResult, WebhookSender } from './http-sender.js';
import { webhookHeaders } from './signing.js';

export interface WebhookRetrySettings {
  /** ms between attempts after the first; its length is the number of retries. */
  scheduleMs: number[];
  /** ± fraction applied to each delay (0.2 = ± 20 %). */
  jitter: number;
  retryAfterMinMs: number;
  retryAfterMaxMs: number;
  /** After a 429 or a timeout the wait is at least this. */
  slowDownMinMs: number;
}

export const retrySettings = (config: Config): WebhookRetrySettings => ({
  scheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
  jitter: config.WEBHOOK_RETRY_JITTER,
  retryAfterMinMs: config.WEBHOOK_RETRY_AFTER_MIN,
  retryAfterMaxMs: config.WEBHOOK_RETRY_AFTER_MAX,
  slowDownMinMs: config.WEBHOOK_SLOW_DOWN_MIN,
});

/**
 * How long to wait before retry `n` (0-based) after the failed attempt `last`: schedule[n] ±
 * jitter; a Retry-After the receiver sent, clamped, replaces it; after a 429 or a timeout at least
 * slowDownMin. Undefined once the schedule is spent.
 */
export function retryDelay(
  settings: WebhookRetrySettings,
  n: number,
  last: Pick<AttemptResult, 'outcome' | 'statusCode' | 'retryAfterMs'>,
  random: () => number,
): number | undefined {
  const base = settings.scheduleMs[n];
  if (base === undefined) return undefined;
  let delay = base * (1 + settings.jitter * (2 * random() - 1));
  if (last.retryAfterMs !== null)
    delay = Math.min(Math.max(last.retryAfterMs, settings.retryAfterMinMs), settings.retryAfterMaxMs);
  if (last.statusCode === 429 || last.outcome === 'timeout') delay = Math.max(delay, settings.slowDownMinMs);
  return Math.round(delay);
}

export interface AttemptDeps {
  sender: WebhookSender;
  userAgent: string;
  settings: WebhookRetrySettings;
}

export interface DeliveryToAttempt {
  endpoint: Pick<SendingEndpoint, 'id' | 'url' | 'secrets'>;
  messageId: string;
  payload: string;
  trigger: Trigger;
  /** Attempts made since the delivery's schedule started (0 for a first attempt or a replay): the index of the wait after this one. */
  attemptsBefore: number;
}

/** Makes the attempt; `answered` is called as soon as the receiver answered (or the POST failed). */
export async function attemptDelivery(
  deps: AttemptDeps,
  d: DeliveryToAttempt,
  answered: () => void = () => {},
): Promise<RecordedAttempt> {
  const attemptedAt = new Date();
  const headers = webhookHeaders({
    secrets: d.endpoint.secrets,
    msgId: d.messageId,
    body: d.payload,
    userAgent: deps.userAgent,
  });
  let result;
  const attributes = { 'plana.webhook.endpoint': d.endpoint.id, 'plana.webhook.message': d.messageId };
  try {
    // inside a trace (the event's, or the retry activity's), the attempt is a span of it
    result = await inChildSpan('webhook attempt', attributes, async (span) => {
      const sent = await deps.sender.send(d.endpoint.url, headers, d.payload);
      span?.setAttribute('plana.webhook.outcome', sent.outcome);
      return sent;
    });
  } finally {
    answered();
  }
  const attempt = { endpointId: d.endpoint.id, messageId: d.messageId, trigger: d.trigger, attemptedAt, result };
  if (result.outcome === 'ok') return { ...attempt, status: 'delivered' };
  if (result.outcome === 'gone') return { ...attempt, status: 'failed' };
  const delay = retryDelay(deps.settings, d.attemptsBefore, result, Math.random);
  if (delay === undefined) return { ...attempt, status: 'failed' };
  const nextAttemptAt = new Date(attemptedAt.getTime() + result.durationMs + delay);
  return { ...attempt, status: 'retrying', nextAttemptAt };
}
