/**
 * Workspace API limits (specification §8, DESIGN §5), shared by every API replica through Redis:
 *
 * - a token bucket per key (capacity 100, refilled at 30 tokens/s), and one per workspace shared by
 *   all its keys (the same figures by default: §8's limit is the workspace's, so making more keys
 *   does not multiply it; never below the per-key limit). Every request takes its token from both
 *   in one atomic Redis call, a Lua script on Redis's clock (rate-limiter-flexible only has fixed
 *   windows: its BurstyRateLimiter approximates a bucket with two windows but cannot express a
 *   continuous refill), which also checks the key's revocation marker (api-keys.ts `revokeApiKey`);
 * - 10 agent invocations per minute per key: rate-limiter-flexible's RateLimiterRedis (a fixed
 *   60-second window, atomic in Redis), which expresses exactly that.
 *
 * Operators raise these limits, and the cap on a workspace's live keys (api-keys.ts), per workspace
 * ("granted by arrangement") in workspace_rate_limits; a process re-reads an override at most
 * OVERRIDE_TTL_MS after it changed.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../lib/config.js';

const OVERRIDE_TTL_MS = 10_000;

export interface BucketResult {
  revoked: boolean;
  allowed: boolean;
  /** The bucket that binds (the emptier one; when refused, the one that refused). */
  by: 'key' | 'workspace';
  limit: number;
  remaining: number;
  /** Seconds until the next token (only when refused). */
  retryAfter: number;
  /** Seconds until the bucket is full again. */
  reset: number;
}

/** A key as the limits see it: its own bucket and its workspace's. */
export interface LimitedKey {
  id: string;
  workspaceId: string;
}

// Answers {revoked, allowed, remaining, retry ms, reset ms, binding bucket: 1 key, 2 workspace}
// after checking the key's revocation marker (KEYS[1]) and taking one token from the key's bucket
// (KEYS[2]) and its workspace's (KEYS[3]) when both hold one.
const ADMIT_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {1, 0, 0, 0, 0, 1} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function refill(key, capacity, rate)
  local state = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(state[1])
  local ts = tonumber(state[2])
  if tokens == nil or ts == nil then tokens = capacity; ts = now end
  return math.min(capacity, tokens + math.max(0, now - ts) * rate / 1000)
end
local function store(key, tokens, capacity, rate)
  redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('PEXPIRE', key, math.ceil(capacity * 1000 / rate) + 1000)
end
local kcap, krate = tonumber(ARGV[1]), tonumber(ARGV[2])
local wcap, wrate = tonumber(ARGV[3]), tonumber(ARGV[4])
local k = refill(KEYS[2], kcap, krate)
local w = refill(KEYS[3], wcap, wrate)
local granted = 0
if k >= 1 and w >= 1 then granted = 1; k = k - 1; w = w - 1 end
store(KEYS[2], k, kcap, krate)
store(KEYS[3], w, wcap, wrate)
local kwait = math.ceil(math.max(0, 1 - k) * 1000 / krate)
local wwait = math.ceil(math.max(0, 1 - w) * 1000 / wrate)
local by = 1
if (granted == 0 and wwait > kwait) or (granted > 0 and math.floor(w) < math.floor(k)) then by = 2 end
local retry = 0
if granted == 0 then retry = math.max(kwait, wwait) end
if by == 2 then
  return {0, granted, math.floor(w), retry, math.ceil((wcap - w) * 1000 / wrate), 2}
end
return {0, granted, math.floor(k), retry, math.ceil((kcap - k) * 1000 / krate), 1}
`;

export const revokedMarker = (keyId: string) => `apikey:${keyId}:revoked`;
const bucketKey = (keyId: string) => `ratelimit:${keyId}:bucket`;
const workspaceBucketKey = (workspaceId: string) => `ratelimit:workspace:${workspaceId}:bucket`;

type AdmitCommand = (
  revokedKey: string,
  bucket: string,
  workspaceBucket: string,
  capacity: number,
  rate: number,
  workspaceCapacity: number,
  workspaceRate: number,
) => Promise<number[]>;

export class RateLimits {
  private readonly overrides = new Map<string, { limits: Limits; at: number }>();
  private readonly agentLimiters = new Map<number, RateLimiterRedis>();
  private readonly admit: AdmitCommand;

  constructor(private readonly deps: { pool: pg.Pool; redis: Redis; config: LimitDefaults }) {
    const redis = deps.redis as Redis & { admitWorkspaceKey?: AdmitCommand };
    if (!redis.admitWorkspaceKey) redis.defineCommand('admitWorkspaceKey', { numberOfKeys: 3, lua: ADMIT_LUA });
    this.admit = redis.admitWorkspaceKey!.bind(redis);
    // Every Lua command this connection runs is defined now, before its first command: with
    // auto-pipelining, ioredis copies the client's commands into a pipeline when it opens one, so a
    // command defined later (RateLimiterRedis defines its own in its constructor) is missing from a
    // pipeline already open, and calling it there throws a TypeError and leaves that pipeline one
    // reply short (an uncaught exception when its replies arrive).
    this.agentLimiter(deps.config.RATE_LIMIT_AGENT_PER_MINUTE);
  }

  /** The limits of a workspace: its operator override, else the configured defaults. */
  async limitsFor(workspaceId: string): Promise<Limits> {
    const cached = this.overrides.get(workspaceId);
    if (cached && Date.now() - cached.at <= OVERRIDE_TTL_MS) return cached.limits;
    const limits = effectiveLimits(this.deps.config, await getLimitOverride(this.deps.pool, workspaceId));
    this.overrides.set(workspaceId, { limits, at: Date.now() });
    return limits;
  }

  /** One atomic Redis call: refused when the key is revoked, else a token from both buckets or a refusal. */
  async admitRequest(key: LimitedKey, limits: Limits): Promise<BucketResult> {
    const [revoked, granted, remaining, retryMs, resetMs, by] = await this.admit(
      revokedMarker(key.id),
      bucketKey(key.id),
      workspaceBucketKey(key.workspaceId),
      limits.burst,
      limits.perSecond,
      limits.workspaceBurst,
      limits.workspacePerSecond,
    );
    const binding = by === 2 ? 'workspace' : 'key';
    return {
      revoked: revoked === 1,
      allowed: revoked !== 1 && granted === 1,
      by: binding,
      limit: binding === 'workspace' ? limits.workspaceBurst : limits.burst,
      remaining: remaining!,
      retryAfter: Math.ceil(retryMs! / 1000),
      reset: Math.ceil(resetMs! / 1000),
    };
  }

  /**
   * The limiter of `perMinute` agent invocations a minute. Its Lua command (one name and script for
   * every limiter) is defined with the first one, in the constructor; a limiter made later for an
   * operator's override redefines the same command, which pipelines already open hold.
   */
  private agentLimiter(perMinute: number): RateLimiterRedis {
    let limiter = this.agentLimiters.get(perMinute);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.deps.redis,
        keyPrefix: `ratelimit-agents-${perMinute}`,
        points: perMinute,
        duration: 60,
      });
      this.agentLimiters.set(perMinute, limiter);
    }
    return limiter;
  }

  /** Spends one of the key's agent invocations of the current minute. */
  async admitAgentInvocation(
    keyId: string,
    limits: Pick<Limits, 'agentPerMinute'>,
  ): Promise<{ allowed: boolean; limit: number; remaining: number; reset: number }> {
    try {
      const res = await this.agentLimiter(limits.agentPerMinute).consume(keyId);
      return {
        allowed: true,
        limit: limits.agentPerMinute,
        remaining: res.remainingPoints,
        reset: Math.ceil(res.msBeforeNext / 1000),
      };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      return {
        allowed: false,
        limit: limits.agentPerMinute,
        remaining: 0,
        reset: Math.max(1, Math.ceil(err.msBeforeNext / 1000)),
      };
    }
  }
}

// ---- the limits of a workspace: defaults, and the operators' overrides ----

export interface Limits {
  /** Per key. */
  burst: number;
  perSecond: number;
  agentPerMinute: number;
  /** Per workspace, all its keys together (never below the per-key figures). */
  workspaceBurst: number;
  workspacePerSecond: number;
  /** The most live keys the workspace may hold. */
  maxApiKeys: number;
}

/** What an operator sets for a workspace; a null (or absent) workspace figure is the default. */
export interface LimitOverride {
  burst: number;
  perSecond: number;
  agentPerMinute: number;
  workspaceBurst?: number | null;
  workspacePerSecond?: number | null;
  maxApiKeys?: number | null;
}

export type LimitDefaults = Pick<
  Config,
  | 'RATE_LIMIT_BURST'
  | 'RATE_LIMIT_PER_SECOND'
  | 'RATE_LIMIT_AGENT_PER_MINUTE'
  | 'RATE_LIMIT_WORKSPACE_BURST'
  | 'RATE_LIMIT_WORKSPACE_PER_SECOND'
  | 'API_KEY_MAX_PER_WORKSPACE'
>;

/** The limits that apply: the override's figures, else the defaults; a workspace's never below one key's. */
export function effectiveLimits(c: LimitDefaults, o: LimitOverride | undefined): Limits {
  const burst = o?.burst ?? c.RATE_LIMIT_BURST;
  const perSecond = o?.perSecond ?? c.RATE_LIMIT_PER_SECOND;
  return {
    burst,
    perSecond,
    agentPerMinute: o?.agentPerMinute ?? c.RATE_LIMIT_AGENT_PER_MINUTE,
    workspaceBurst: Math.max(burst, o?.workspaceBurst ?? c.RATE_LIMIT_WORKSPACE_BURST),
    workspacePerSecond: Math.max(perSecond, o?.workspacePerSecond ?? c.RATE_LIMIT_WORKSPACE_PER_SECOND),
    maxApiKeys: o?.maxApiKeys ?? c.API_KEY_MAX_PER_WORKSPACE,
  };
}

// ---- the per-workspace overrides (ops API), by workspace id ----

const OVERRIDE_COLUMNS = `burst, per_second AS "perSecond", agent_per_minute AS "agentPerMinute", workspace_burst AS "workspaceBurst",
  workspace_per_second AS "workspacePerSecond", max_api_keys AS "maxApiKeys"`;

export async function getLimitOverride(pool: pg.Pool, workspaceId: string): Promise<LimitOverride | undefined> {
  const { rows } = await pool.query<LimitOverride>(
    `SELECT ${OVERRIDE_COLUMNS} FROM workspace_rate_limits WHERE workspace_id = $1`,
    [workspaceId],
  );
  return rows[0];
}

export async function setLimitOverride(pool: pg.Pool, workspaceId: string, limits: LimitOverride): Promise<void> {
  await pool.query(
    `INSERT INTO workspace_rate_limits (workspace_id, burst, per_second, agent_per_minute, workspace_burst, workspace_per_second, max_api_keys)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (workspace_id) DO UPDATE
       SET burst = EXCLUDED.burst, per_second = EXCLUDED.per_second, agent_per_minute = EXCLUDED.agent_per_minute,
           workspace_burst = EXCLUDED.workspace_burst, workspace_per_second = EXCLUDED.workspace_per_second,
           max_api_keys = EXCLUDED.max_api_keys, updated_at = now()`,
    [
      workspaceId,
      limits.burst,
      limits.perSecond,
      limits.agentPerMinute,
      limits.workspaceBurst ?? null,
      limits.workspacePerSecond ?? null,
      limits.maxApiKeys ?? null,
    ],
  );
}

export async function removeLimitOverride(pool: pg.Pool, workspaceId: string): Promise<void> {
  await pool.query('DELETE FROM workspace_rate_limits WHERE workspace_id = $1', [workspaceId]);
}
