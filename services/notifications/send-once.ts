/**
 * Sending at most once per idempotency key: a key seen before returns the first result instead of
 * sending again, so a retried call that timed out after the mail went out does not send a second
 * e-mail. The key is claimed in Redis while the mail is sent (a second call meanwhile is a 409).
 */
import type { Redis } from 'ioredis';
import { AppError } from '../../lib/errors.js';
import type { Mail, Mailer } from './mailer.js';

const IDEMPOTENCY_TTL_S = 7 * 24 * 3600;
const CLAIM_TTL_S = 60;

export class IdempotentMailer {
  constructor(
    private readonly mailer: Mailer,
    private readonly redis: Redis,
  ) {}

  /**
   * Sends `mail` at most once per idempotency key. A function is called only when the mail is
   * really to be sent (a single-use link in it is issued once per sending, never for a repeat).
   */
  async sendOnce(key: string | undefined, mail: Mail | (() => Promise<Mail>)) {
    const compose = typeof mail === 'function' ? mail : async () => mail;
    if (!key) return { status: 'sent' as const, ...(await this.mailer.send(await compose())) };
    const slot = `notifications:idempotency:${key}`;
    const claimed = await this.redis.set(slot, 'pending', 'EX', CLAIM_TTL_S, 'NX');
    if (!claimed) {
      const seen = await this.redis.get(slot);
      if (seen && seen !== 'pending') return { status: 'duplicate' as const, messageId: seen };
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed; retry shortly.');
    }
    let composed: Mail;
    try {
      composed = await compose();
    } catch (err) {
      await this.redis.del(slot);
      throw err;
    }
    try {
      const { messageId } = await this.mailer.send(composed);
      await this.redis.set(slot, messageId, 'EX', IDEMPOTENCY_TTL_S);
      return { status: 'sent' as const, messageId };
    } catch (err) {
      await this.redis.del(slot);
      throw new AppError('BAD_GATEWAY', 'The mail relay did not accept the message; retry later.', {
        cause: (err as Error).message,
      });
    }
  }
}
