/**
 * When a failed webhook delivery is tried again: the retry schedule with jitter, a Retry-After the
 * receiver sent (clamped), and a slower pace after a 429 or a timeout. Pure: the dispatcher uses
 * it for the first retry's start delay, the delivery workflow for the waits after that.
 */

/** The attempt outcomes (sender.ts). */
export type WebhookOutcome =
  'ok' | 'gone' | 'redirect' | 'http-status' | 'timeout' | 'connection' | 'forbidden-address' | 'endpoint-disabled';

export interface WebhookAttemptSummary {
  outcome: WebhookOutcome;
  statusCode: number | null;
  retryAfterMs: number | null;
  error: string | null;
  /** The endpoint was disabled by this attempt (410, or failing too long): stop. */
  endpointDisabled?: boolean;
}

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

/** How long to wait before retry `n` (0-based) after `last`; undefined once the schedule is spent. */
export function retryDelay(
  settings: WebhookRetrySettings,
  n: number,
  last: WebhookAttemptSummary,
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
