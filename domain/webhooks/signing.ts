/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): headers `webhook-id` (the message
 * id, the same on every attempt), `webhook-timestamp` (seconds) and `webhook-signature`
 * (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one per valid secret, space-separated), so
 * receivers verify with the public `standardwebhooks` library. Secrets are `whsec_` + base64 of
 * random bytes, generated here.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newSecret(bytes = 32): string {
  if (bytes < 24 || bytes > 64) throw new Error('a webhook secret has 24 to 64 random bytes');
  return SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

const secretKey = (secret: string) =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');

/** The `webhook-signature` value: one `v1,` signature per secret (current first). */
export function signatureHeader(secrets: string[], msgId: string, timestamp: number, body: string): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', secretKey(s)).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`)
    .join(' ');
}

/** The headers of one attempt. */
export function webhookHeaders(opts: {
  secrets: string[];
  msgId: string;
  body: string;
  userAgent: string;
  now?: number;
}) {
  const timestamp = Math.floor((opts.now ?? Date.now()) / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': opts.userAgent,
    'webhook-id': opts.msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(opts.secrets, opts.msgId, timestamp, opts.body),
  };
}

/** The message id of an event: stable per CloudEvents identity (source + id), so a re-read event is the same message. */
export function messageIdOf(source: string, id: string): string {
  return `msg_${createHash('sha256').update(`${source}\n${id}`).digest('base64url').slice(0, 27)}`;
}

/** The body receivers get: Standard Webhooks' `{type, timestamp, data}`. */
export function messageBody(ev: { type: string; time?: string; data?: unknown }): string {
  return JSON.stringify({ type: ev.type, timestamp: ev.time ?? new Date().toISOString(), data: ev.data ?? {} });
}
