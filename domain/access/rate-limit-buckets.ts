/**
 * The token buckets of the workspace API limits (specification §8, DESIGN §5) in Redis: one per key
 * (capacity `burst`, refilled at `perSecond`) and one per workspace shared by all its keys, both
 * taken from at once by a Lua script, because rate-limiter-flexible only has fixed windows (its
 * BurstyRateLimiter approximates a bucket with two windows but cannot express a continuous refill).
 * The script runs atomically in Redis with Redis's own clock, and can check the key's revocation
 * marker in the same call.
 *
 * A replica leases tokens ahead of need (see `leaseCap`): a busy key costs a call to Redis per
 * lease, not per request, and a small bucket stays exact.
 */
import type { Redis } from 'ioredis';
import type { Limits } from './rate-limit-overrides.js';

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
