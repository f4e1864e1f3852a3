/**
 * Workspace API limits (specification §8, DESIGN §5), shared by every API replica through Redis:
 *
 * - a token bucket per key (capacity 100, refilled at 30 tokens/s): a Lua script, because
 *   rate-limiter-flexible only has fixed windows (its BurstyRateLimiter approximates a bucket with
 *   two windows but cannot express a continuous refill). The script runs atomically in Redis with
 *   Redis's own clock, and it first checks the key's revocation marker, so a request costs one
 *   round trip for both;
 * - 10 agent invocations per minute per key: rate-limiter-flexible's RateLimiterRedis (a fixed
 *   60-second window, atomic in Redis), which expresses exactly that.
 *
 * Operators raise either limit per workspace ("granted by arrangement") in workspace_rate_limits;
 * a process re-reads an override at most OVERRIDE_TTL_MS after it changed.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from './config.js';

export interface Limits {
  burst: number;
  perSecond: number;
  agentPerMinute: number;
}

export interface BucketResult {
  revoked: boolean;
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the next token (only when refused). */
  retryAfter: number;
  /** Seconds until the bucket is full again. */
  reset: number;
}

const OVERRIDE_TTL_MS = 10_000;

const ADMIT_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {1, 0, 0, 0, 0} end
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[2], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then tokens = capacity; ts = now end
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate / 1000)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[2], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[2], math.ceil(capacity * 1000 / rate) + 1000)
local retry = 0
if allowed == 0 then retry = math.ceil((1 - tokens) * 1000 / rate) end
return {0, allowed, math.floor(tokens), retry, math.ceil((capacity - tokens) * 1000 / rate)}
`;

export const revokedMarker = (keyId: string) => `apikey:${keyId}:revoked`;
const bucketKey = (keyId: string) => `ratelimit:${keyId}:bucket`;

type AdmitCommand = (revokedKey: string, bucket: string, capacity: number, rate: number) => Promise<number[]>;

export class RateLimits {
  private readonly overrides = new Map<string, { limits: Limits | undefined; at: number }>();
  private readonly agentLimiters = new Map<number, RateLimiterRedis>();
  private readonly admit: AdmitCommand;

  constructor(
    private readonly deps: { pool: pg.Pool; redis: Redis; config: Pick<Config, 'RATE_LIMIT_BURST' | 'RATE_LIMIT_PER_SECOND' | 'RATE_LIMIT_AGENT_PER_MINUTE'> },
  ) {
    const redis = deps.redis as Redis & { admitWorkspaceKey?: AdmitCommand };
    if (!redis.admitWorkspaceKey) redis.defineCommand('admitWorkspaceKey', { numberOfKeys: 2, lua: ADMIT_LUA });
    this.admit = (redis as Redis & { admitWorkspaceKey: AdmitCommand }).admitWorkspaceKey.bind(redis);
  }

  /** The limits of a workspace when this process read them recently (no I/O), else undefined. */
  cachedLimitsFor(workspaceId: string): Limits | undefined {
    const cached = this.overrides.get(workspaceId);
    if (!cached || Date.now() - cached.at > OVERRIDE_TTL_MS) return undefined;
    return cached.limits ?? this.defaults();
  }

  /** The limits of a workspace: its operator override, else the configured defaults. */
  async limitsFor(workspaceId: string): Promise<Limits> {
    const hit = this.cachedLimitsFor(workspaceId);
    if (hit) return hit;
    const override = await readOverride(this.deps.pool, workspaceId);
    this.overrides.set(workspaceId, { limits: override, at: Date.now() });
    return override ?? this.defaults();
  }

  private defaults(): Limits {
    const { RATE_LIMIT_BURST, RATE_LIMIT_PER_SECOND, RATE_LIMIT_AGENT_PER_MINUTE } = this.deps.config;
    return { burst: RATE_LIMIT_BURST, perSecond: RATE_LIMIT_PER_SECOND, agentPerMinute: RATE_LIMIT_AGENT_PER_MINUTE };
  }

  /** One atomic Redis call: is the key revoked, and may it spend a token of its bucket? */
  admitRequest(keyId: string, limits: Limits): Promise<BucketResult> {
    return this.admit(revokedMarker(keyId), bucketKey(keyId), limits.burst, limits.perSecond).then(
      ([revoked, allowed, remaining, retryMs, resetMs]) => ({
        revoked: revoked === 1,
        allowed: allowed === 1,
        limit: limits.burst,
        remaining: remaining ?? 0,
        retryAfter: Math.ceil((retryMs ?? 0) / 1000),
        reset: Math.ceil((resetMs ?? 0) / 1000),
      }),
    );
  }

  /** Spends one of the key's agent invocations of the current minute. */
  async admitAgentInvocation(keyId: string, limits: Limits): Promise<{ allowed: boolean; limit: number; remaining: number; reset: number }> {
    let limiter = this.agentLimiters.get(limits.agentPerMinute);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.deps.redis,
        keyPrefix: `ratelimit-agents-${limits.agentPerMinute}`,
        points: limits.agentPerMinute,
        duration: 60,
      });
      this.agentLimiters.set(limits.agentPerMinute, limiter);
    }
    try {
      const res = await limiter.consume(keyId);
      return { allowed: true, limit: limits.agentPerMinute, remaining: res.remainingPoints, reset: Math.ceil(res.msBeforeNext / 1000) };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      return { allowed: false, limit: limits.agentPerMinute, remaining: 0, reset: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
    }
  }
}

async function readOverride(pool: pg.Pool, workspaceId: string): Promise<Limits | undefined> {
  const { rows } = await pool.query<Limits>(
    `SELECT burst, per_second AS "perSecond", agent_per_minute AS "agentPerMinute"
       FROM workspace_rate_limits WHERE workspace_id = $1`,
    [workspaceId],
  );
  return rows[0];
}
