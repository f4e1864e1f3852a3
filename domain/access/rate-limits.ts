/**
 * Workspace API limits (specification §8, DESIGN §5), shared by every API replica through Redis:
 *
 * - a token bucket per key (capacity 100, refilled at 30 tokens/s), and one per workspace shared by
 *   all its keys (the same figures by default: §8's limit is the workspace's, so making more keys
 *   does not multiply it; never below the per-key limit), taken from at once by one atomic Redis
 *   call (rate-limit-buckets.ts). A replica leases tokens ahead of need: a busy key costs a call to
 *   Redis per lease, not per request. When the caller cannot trust its revocation feed
 *   (domain/access/key-revocations.ts), the same call also checks the key's revocation marker and
 *   takes exactly one token;
 * - 10 agent invocations per minute per key: rate-limiter-flexible's RateLimiterRedis (a fixed
 *   60-second window, atomic in Redis), which expresses exactly that.
 *
 * Operators raise these limits, and the cap on a workspace's live keys (api-keys.ts), per workspace
 * ("granted by arrangement") in workspace_rate_limits (rate-limit-overrides.ts); a process re-reads
 * an override at most OVERRIDE_TTL_MS after it changed.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import {
  defineAdmitCommand,
  emptyLease,
  fill,
  grantedResult,
  leaseCap,
  nextLeaseSize,
  refusedResult,
  revokedResult,
  type AdmitKey,
  type BucketResult,
  type Lease,
  type LimitedKey,
} from './rate-limit-buckets.js';
import { effectiveLimits, getLimitOverride, type LimitDefaults, type Limits } from './rate-limit-overrides.js';

export * from './rate-limit-overrides.js';
export { leaseCap, revokedMarker, type BucketResult, type LimitedKey } from './rate-limit-buckets.js';

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
