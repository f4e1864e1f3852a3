/**
 * Password guessing is throttled the same way wherever a password is checked (the account API's
 * login, the auth service's login, accepting an invitation with an existing account, the current
 * password of a profile change): failed attempts count per key in Redis (rate-limiter-flexible);
 * after LOGIN_MAX_FAILURES within LOGIN_FAILURE_WINDOW_SECONDS the next attempt is refused with 429
 * and Retry-After, even with the right password. A success forgets the failures.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';

export class PasswordThrottle {
  private readonly failures: RateLimiterRedis;

  constructor(
    redis: Redis,
    private readonly cfg: Pick<Config, 'LOGIN_MAX_FAILURES' | 'LOGIN_FAILURE_WINDOW_SECONDS'>,
    keyPrefix = 'login-failures',
  ) {
    this.failures = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix,
      points: cfg.LOGIN_MAX_FAILURES,
      duration: cfg.LOGIN_FAILURE_WINDOW_SECONDS,
    });
  }

  /** The throttle key of a login attempt: the e-mail (any case) and the client address, hashed. */
  static loginKey(email: string, clientAddress: string): string {
    return createHash('sha256').update(`${email.toLowerCase()}|${clientAddress}`).digest('base64url');
  }

  /**
   * Runs `check` (which throws AppError UNAUTHORIZED or FORBIDDEN for a wrong password) unless the
   * key is throttled; counts its failure, forgets the failures on success. `onRetryAfter` receives
   * the seconds to wait when throttled (for the Retry-After header).
   */
  async attempt<T>(key: string, check: () => Promise<T>, onRetryAfter: (seconds: number) => void): Promise<T> {
    const seen = await this.failures.get(key);
    if (seen && seen.consumedPoints >= this.cfg.LOGIN_MAX_FAILURES) {
      const retryAfter = Math.max(1, Math.ceil(seen.msBeforeNext / 1000));
      onRetryAfter(retryAfter);
      throw new AppError('RATE_LIMITED', `Too many failed password attempts; retry after ${retryAfter} s.`);
    }
    let result: T;
    try {
      result = await check();
    } catch (err) {
      if (err instanceof AppError && (err.code === 'UNAUTHORIZED' || err.code === 'FORBIDDEN'))
        await this.failures.penalty(key, 1);
      throw err;
    }
    await this.failures.delete(key);
    return result;
  }
}
