/**
 * What a workspace may do through its keys: its Workspace API limits (specification §8, DESIGN §5),
 * shared by every API replica through Redis, and its standing (below: a suspended workspace's keys
 * get 403). The limits:
 *
 * - a token bucket per key (capacity 100, refilled at 30 tokens/s), and one per workspace shared by
 *   all its keys (the same figures by default: §8's limit is the workspace's, so making more keys
 *   does not multiply it; never below the per-key limit), taken from at once by one atomic Redis
 *   call, a Lua script on Redis's clock (rate-limiter-flexible only has fixed windows: its
 *   BurstyRateLimiter approximates a bucket with two windows but cannot express a continuous
 *   refill). A replica leases tokens ahead of need: a busy key costs a call to
 *   Redis per lease, not per request. When the caller cannot trust its revocation feed
 *   (the revocation feed in domain/access/api-keys.ts), the same call also checks the key's revocation marker and
 *   takes exactly one token;
 * - 10 agent invocations per minute per key: rate-limiter-flexible's RateLimiterRedis (a fixed
 *   60-second window, atomic in Redis), which expresses exactly that.
 *
 * Operators raise these limits, and the cap on a workspace's live keys (api-keys.ts), per workspace
 * ("granted by arrangement") in workspace_rate_limits (below); a process re-reads an override at most
 * OVERRIDE_TTL_MS after it changed.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../lib/config.js';
import type { Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';

const OVERRIDE_TTL_MS = 10_000;
const SWEEP_MS = 1_000;

export class RateLimits {
  private readonly overrides = new Map<string, { limits: Limits; at: number }>();
  private readonly agentLimiters = new Map<number, RateLimiterRedis>();
  private readonly admit: AdmitKey;
  private readonly leases = new Map<string, Lease>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly deps: { pool: pg.Pool; redis: Redis; config: LimitDefaults }) {
    this.admit = defineAdmitCommand(deps.redis);
    // Every Lua command this connection runs is defined now, before its first command: with
    // auto-pipelining, ioredis copies the client's commands into a pipeline when it opens one, so a
    // command defined later (RateLimiterRedis defines its own in its constructor) is missing from a
    // pipeline already open (a lease renewal on its way), and calling it there throws a TypeError
    // and leaves that pipeline one reply short (an uncaught exception when its replies arrive).
    this.agentLimiter(deps.config.RATE_LIMIT_AGENT_PER_MINUTE);
    // a failed sweep loses a few tokens of an idle key until its bucket refills: nothing to report
    this.sweeper = setInterval(() => void this.sweepLeases().catch(() => {}), SWEEP_MS);
    this.sweeper.unref();
  }

  /** The limits of a workspace when this process read them recently (no I/O), else undefined. */
  cachedLimitsFor(workspaceId: string): Limits | undefined {
    const cached = this.overrides.get(workspaceId);
    if (!cached || Date.now() - cached.at > OVERRIDE_TTL_MS) return undefined;
    return cached.limits;
  }

  /** The limits of a workspace: its operator override, else the configured defaults. */
  async limitsFor(workspaceId: string): Promise<Limits> {
    const hit = this.cachedLimitsFor(workspaceId);
    if (hit) return hit;
    const limits = effectiveLimits(this.deps.config, await getLimitOverride(this.deps.pool, workspaceId));
    this.overrides.set(workspaceId, { limits, at: Date.now() });
    return limits;
  }

  /**
   * Spends a token this replica leased earlier (no I/O), or returns undefined when it holds none
   * for the key: then call `admitRequest`.
   */
  admitFromLease(key: LimitedKey, limits: Limits): BucketResult | undefined {
    const keyId = key.id;
    const lease = this.leases.get(keyId);
    if (!lease || lease.tokens < 1 || lease.expiresAt <= performance.now()) return undefined;
    lease.tokens--;
    lease.spent++;
    // half spent: lease the next tokens now, so that concurrent requests do not all find it empty
    // (not for small buckets, which lease one token at a time to stay exact)
    if (lease.tokens < lease.size / 2 && !lease.renewal && leaseCap(limits) > 1) this.renew(keyId, lease, limits);
    return grantedResult(lease, limits);
  }

  private renew(keyId: string, lease: Lease, limits: Limits) {
    const now = performance.now();
    const size = nextLeaseSize(lease, limits, now);
    lease.spent = 0;
    lease.since = now;
    lease.renewal = this.admit(keyId, lease.workspaceId, limits, size, 0, '0')
      .then(([, granted, remaining, , resetMs, by]) => {
        if (this.leases.get(keyId) !== lease) return this.giveBack(keyId, lease.workspaceId, limits, granted!); // dropped or swept meanwhile: hand them back
        if (granted! >= 1) fill(lease, { granted: granted!, size, limits, remaining, resetMs, by });
      })
      .catch(() => {}) // the next request without a leased token asks Redis itself, and reports
      .finally(() => {
        lease.renewal = undefined;
      });
  }

  /** Returns leased tokens to the key's bucket and its workspace's (each capped at its burst). */
  private async giveBack(keyId: string, workspaceId: string, limits: Limits, tokens: number): Promise<void> {
    if (tokens >= 1) await this.admit(keyId, workspaceId, limits, 0, tokens, '0');
  }

  /**
   * One atomic Redis call that takes a token, and leases a few more when the key is busy. With
   * `checkRevoked` it instead checks the key's revocation marker and takes exactly one token.
   */
  async admitRequest(key: LimitedKey, limits: Limits, opts: { checkRevoked: boolean }): Promise<BucketResult> {
    const keyId = key.id;
    let lease = this.leases.get(keyId);
    if (lease?.renewal && !opts.checkRevoked) {
      // the lease ran dry while its renewal is on its way: wait for it rather than ask Redis again
      await lease.renewal;
      const leased = this.admitFromLease(key, limits);
      if (leased) return leased;
      lease = this.leases.get(keyId);
    }
    const now = performance.now();
    const live = lease && lease.expiresAt > now;
    const giveBack = lease && !live ? lease.tokens : 0;
    const size = opts.checkRevoked ? 1 : nextLeaseSize(lease, limits, now);
    if (lease) {
      if (!live) lease.tokens = 0;
      lease.spent = 0;
      lease.since = now;
    }
    // the expired lease's tokens came from the buckets of the workspace it was leased under
    const [revoked, granted, remaining, retryMs, resetMs, by] = await this.admit(
      keyId,
      key.workspaceId,
      limits,
      size,
      giveBack,
      opts.checkRevoked ? '1' : '0',
    );
    if (revoked === 1) {
      this.leases.delete(keyId);
      return revokedResult(limits);
    }
    lease = this.leases.get(keyId);
    if (!lease) this.leases.set(keyId, (lease = emptyLease(key.workspaceId, size, now, limits)));
    // concurrent calls of this replica add up in one lease; a call Redis refused can still spend a
    // token another one leased meanwhile
    fill(lease, { granted: granted!, size, limits, remaining, resetMs, by });
    if (lease.tokens >= 1) {
      lease.tokens--;
      lease.spent++;
      return grantedResult(lease, limits);
    }
    return refusedResult(lease, limits, retryMs);
  }

  /** A revoked key's lease is worthless. */
  dropLease(keyId: string) {
    this.leases.delete(keyId);
  }

  /** Gives the unspent tokens of expired leases back to their buckets. */
  async sweepLeases(): Promise<void> {
    const now = performance.now();
    const returns: Promise<void>[] = [];
    for (const [keyId, lease] of this.leases) {
      if (lease.expiresAt > now) continue;
      this.leases.delete(keyId);
      returns.push(this.giveBack(keyId, lease.workspaceId, lease.limits, lease.tokens));
    }
    await Promise.all(returns);
  }

  close() {
    clearInterval(this.sweeper);
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

// ---- the buckets in Redis, and the tokens a replica leases from them ----

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

// ---- the admit script ----

// Refills the key's bucket (KEYS[2]) and its workspace's (KEYS[3]), gives back the unspent tokens
// of an expired lease (ARGV[4]) to both, then grants up to ARGV[3] tokens from both at once. With
// ARGV[5] = '1' it first checks the key's revocation marker. Answers {revoked, granted, remaining,
// retry ms, reset ms, binding bucket: 1 key, 2 workspace}.
const ADMIT_LUA = `
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then return {1, 0, 0, 0, 0, 1} end
local want = tonumber(ARGV[3])
local back = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function refill(key, capacity, rate)
  local state = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(state[1])
  local ts = tonumber(state[2])
  if tokens == nil or ts == nil then tokens = capacity; ts = now end
  return math.min(capacity, tokens + math.max(0, now - ts) * rate / 1000 + back)
end
local function store(key, tokens, capacity, rate)
  redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('PEXPIRE', key, math.ceil(capacity * 1000 / rate) + 1000)
end
local kcap, krate = tonumber(ARGV[1]), tonumber(ARGV[2])
local wcap, wrate = tonumber(ARGV[6]), tonumber(ARGV[7])
local k = refill(KEYS[2], kcap, krate)
local w = refill(KEYS[3], wcap, wrate)
local granted = math.max(0, math.min(want, math.floor(k), math.floor(w)))
k = k - granted
w = w - granted
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
  want: number,
  giveBack: number,
  checkRevoked: '0' | '1',
  workspaceCapacity: number,
  workspaceRate: number,
) => Promise<number[]>;

/**
 * One run of the admit script for a key: gives back `giveBack` tokens, takes up to `want`; answers
 * [revoked, granted, remaining, retry ms, reset ms, binding bucket (1 key, 2 workspace)].
 */
export type AdmitKey = (
  keyId: string,
  workspaceId: string,
  limits: Limits,
  want: number,
  giveBack: number,
  checkRevoked: '0' | '1',
) => Promise<number[]>;

/** Defines the admit script on the connection (once per connection) and returns its runner. */
export function defineAdmitCommand(connection: Redis): AdmitKey {
  const redis = connection as Redis & { admitWorkspaceKey?: AdmitCommand };
  if (!redis.admitWorkspaceKey) redis.defineCommand('admitWorkspaceKey', { numberOfKeys: 3, lua: ADMIT_LUA });
  const admit = (redis as Redis & { admitWorkspaceKey: AdmitCommand }).admitWorkspaceKey.bind(redis);
  return (keyId, workspaceId, limits, want, giveBack, checkRevoked) =>
    admit(
      revokedMarker(keyId),
      bucketKey(keyId),
      workspaceBucketKey(workspaceId),
      limits.burst,
      limits.perSecond,
      want,
      giveBack,
      checkRevoked,
      limits.workspaceBurst,
      limits.workspacePerSecond,
    );
}

// ---- leases ----

/**
 * Tokens this replica took from a key's shared bucket ahead of need. A lease lives LEASE_TTL_MS
 * after its last renewal; the unspent tokens of an expired lease go back to the bucket with the
 * next call to Redis for the key, or with the sweep.
 */
export interface Lease {
  workspaceId: string;
  tokens: number;
  expiresAt: number;
  /** How many tokens the last call to Redis asked for. */
  size: number;
  /** Tokens spent since `since` (performance.now()): the key's pace here, to size the next lease. */
  spent: number;
  since: number;
  /** The binding bucket as of the last call to Redis, for the RateLimit-* headers. */
  bucketRemaining: number;
  reset: number;
  by: 'key' | 'workspace';
  /** The limits it was leased under: the sweep returns its tokens to a bucket of that shape. */
  limits: Limits;
  /** A renewal on its way (started when half of the lease was spent). */
  renewal?: Promise<void>;
}

/** A lease holds what the key spends on this replica in PACE_MS, at most `leaseCap`. */
const PACE_MS = 250;
const LEASE_TTL_MS = 1_000;

/** A lease with no tokens yet, before its first call to Redis. */
export function emptyLease(workspaceId: string, size: number, now: number, limits: Limits): Lease {
  return {
    workspaceId,
    tokens: 0,
    expiresAt: 0,
    size,
    spent: 0,
    since: now,
    bucketRemaining: 0,
    reset: 0,
    by: 'key',
    limits,
  };
}

/** Adds what Redis granted to a lease and notes the bucket's state for the RateLimit-* headers. */
export function fill(
  lease: Lease,
  r: { granted: number; size: number; limits: Limits; remaining?: number; resetMs?: number; by?: number },
) {
  lease.tokens += r.granted;
  lease.size = r.size;
  lease.limits = r.limits;
  lease.expiresAt = performance.now() + LEASE_TTL_MS;
  lease.bucketRemaining = r.remaining ?? 0;
  lease.reset = Math.ceil((r.resetMs ?? 0) / 1000);
  lease.by = r.by === 2 ? 'workspace' : 'key';
}

/**
 * The most a replica leases at once: at most 5 % of the burst and a quarter second of refill, so the
 * bucket stays exact for small limits (one token per call to Redis) and at most that many tokens
 * sit unspent on one replica while another one refuses a request.
 */
export const leaseCap = (limits: Limits) =>
  Math.max(1, Math.min(Math.floor(limits.burst / 20), Math.floor((limits.perSecond * PACE_MS) / 1000)));

/** What to lease next: what the key spent here in PACE_MS at its recent pace, within [1, leaseCap]. */
export function nextLeaseSize(lease: Lease | undefined, limits: Limits, now: number): number {
  if (!lease) return 1;
  const pace = Math.ceil((lease.spent * PACE_MS) / Math.max(1, now - lease.since));
  return Math.max(1, Math.min(leaseCap(limits), pace));
}

// ---- answers ----

const bucketLimit = (limits: Limits, by: 'key' | 'workspace') =>
  by === 'workspace' ? limits.workspaceBurst : limits.burst;

/** A request admitted with a token of the lease (already spent from it). */
export function grantedResult(lease: Lease, limits: Limits): BucketResult {
  return {
    revoked: false,
    allowed: true,
    by: lease.by,
    limit: bucketLimit(limits, lease.by),
    remaining: lease.bucketRemaining + lease.tokens,
    retryAfter: 0,
    reset: lease.reset,
  };
}

/** A request refused: the binding bucket is empty for `retryMs`. */
export function refusedResult(lease: Lease, limits: Limits, retryMs: number | undefined): BucketResult {
  return {
    revoked: false,
    allowed: false,
    by: lease.by,
    limit: bucketLimit(limits, lease.by),
    remaining: 0,
    retryAfter: Math.ceil((retryMs ?? 0) / 1000),
    reset: lease.reset,
  };
}

/** A request with a revoked key. */
export function revokedResult(limits: Limits): BucketResult {
  return { revoked: true, allowed: false, by: 'key', limit: limits.burst, remaining: 0, retryAfter: 0, reset: 0 };
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

/*
 * ---- the workspace's standing ----
 *
 * Whether a workspace is suspended (payment failed past its grace period, DESIGN §5), as the
 * Workspace API's key check needs it on every request: read from PostgreSQL and trusted for
 * WORKSPACE_STANDING_CACHE_MS, so a warm request does no I/O and a suspension or its lifting
 * reaches every API replica within that time.
 */
export class WorkspaceStanding {
  private readonly cache = new Map<string, { suspended: boolean; at: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs: number,
  ) {}

  /** True/false when this process read it recently (no I/O), else undefined. */
  cached(workspaceId: string): boolean | undefined {
    const hit = this.cache.get(workspaceId);
    if (!hit || performance.now() - hit.at > this.ttlMs) return undefined;
    return hit.suspended;
  }

  async suspended(workspaceId: string): Promise<boolean> {
    const hit = this.cached(workspaceId);
    if (hit !== undefined) return hit;
    const { rows } = await this.db.query<{ suspended: boolean }>(
      'SELECT suspended_at IS NOT NULL AS suspended FROM subscriptions WHERE workspace_id = $1',
      [workspaceId],
    );
    const suspended = rows[0]?.suspended === true;
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(workspaceId, { suspended, at: performance.now() });
    return suspended;
  }
}

export const workspaceSuspended = (slug: string) =>
  new AppError(
    'WORKSPACE_SUSPENDED',
    `Workspace "${slug}" is suspended because a payment failed and its grace period is over; its API keys work again once the open invoice is paid. An admin can still sign in (POST /api/auth/login) and see GET /api/billing/invoices.`,
  );
