/**
 * How many password links ("forgot your password", "send me a new link") may be asked for: per
 * address (or per link) and per client address, an hour each (rate-limiter-flexible in Redis, like
 * the other limits); beyond either, 429 with Retry-After. Both are spent on every request, whether
 * or not an account has the address, so the answers (and their timing) say nothing about accounts.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../../lib/errors.js';

const hashed = (s: string) => createHash('sha256').update(s).digest('base64url');

export function passwordLinkLimits(app: FastifyInstance) {
  const { redis, config } = app.deps;
  const perSubject = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'password-links:subject',
    points: config.PASSWORD_LINKS_PER_ADDRESS_PER_HOUR,
    duration: 3600,
  });
  const perClient = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'password-links:client',
    points: config.PASSWORD_LINKS_PER_CLIENT_PER_HOUR,
    duration: 3600,
  });
  /** Spends one link of `subject` (an e-mail address, any case, or a link's token) and of the client; 429 beyond. */
  return async function spendPasswordLink(subject: string, client: string, reply: FastifyReply) {
    const spent = await Promise.allSettled([
      perSubject.consume(hashed(subject.trim().toLowerCase())),
      perClient.consume(hashed(client)),
    ]);
    const refused = spent.filter((s) => s.status === 'rejected').map((s) => s.reason as unknown);
    if (refused.length === 0) return;
    const waits = refused.map((reason) => {
      if (!(reason instanceof RateLimiterRes)) throw reason;
      return reason.msBeforeNext;
    });
    const retryAfter = Math.max(1, Math.ceil(Math.max(...waits) / 1000));
    reply.header('retry-after', retryAfter);
    throw new AppError(
      'RATE_LIMITED',
      `Too many requests for password links from here or for this address; retry after ${retryAfter} s.`,
    );
  };
}
