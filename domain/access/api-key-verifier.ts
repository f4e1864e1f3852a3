/**
 * Verifying workspace API keys fast without letting a revocation be outlived:
 *
 * - bcrypt (≈ 80 ms at cost 10) runs only the first time a process sees a token; after that the
 *   process trusts an in-memory LRU entry keyed by the token's SHA-256 (never the token itself)
 *   for at most API_KEY_CACHE_TTL_SECONDS;
 * - revocation: revoking sets a marker in Redis, tells every replica through the revocation feed
 *   (domain/access/key-revocations.ts), which drops the key from their caches, and then deletes the key's
 *   row. A verification (cache miss) checks the marker after bcrypt, so it cannot cache a key
 *   revoked meanwhile; while a replica cannot trust its feed, every request checks the marker (in
 *   the same atomic Redis call as the rate limit, domain/access/rate-limits.ts). The marker lives far longer
 *   than any cache entry;
 * - last_used_at is kept in memory per key and written to PostgreSQL every API_KEY_USAGE_FLUSH_MS
 *   by one UPDATE for all keys used meanwhile (never a write per request).
 */
import { hash } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { findKeyByPrefix, lookupPrefix, recordKeyUsage } from './api-keys.js';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { revokedMarker } from './rate-limits.js';

export interface VerifiedKey {
  id: string;
  prefix: string;
  scopes: string[];
  workspace: { id: string; slug: string };
}

/** The one answer for a missing, malformed, unknown, wrong or revoked key: it does not say which. */
export const INVALID_KEY = 'The workspace API key is missing, malformed, unknown or revoked.';
export const invalidKey = () => new AppError('UNAUTHORIZED', INVALID_KEY);

const REVOKED_MARKER_TTL_SECONDS = 30 * 24 * 3600;

interface CacheEntry {
  key: VerifiedKey;
  expiresAt: number;
  /** Forgotten (revoked, or the cache cleared): connections that remembered it must not use it. */
  dead?: boolean;
}

export class ApiKeyVerifier {
  /**
   * An LRU by a Map's insertion order, not the lru-cache package: every entry carries the `dead`
   * flag that keep-alive connections read (set on eviction, revocation and clearing alike), the TTL
   * is checked once per hit, and this is the hot path bench:auth measures; a library would add its
   * own per-get bookkeeping for what is ten lines here.
   */
  private readonly cache = new Map<string, CacheEntry>();
  /**
   * The token each keep-alive connection sent last and its cache entry: the next request on that
   * connection carries the same token almost always, and a string comparison is cheaper than
   * hashing it. Held only while the connection is open (a WeakMap), the token lives no longer
   * than the connection's own buffers hold it anyway.
   */
  private readonly byConnection = new WeakMap<object, { token: string; entry: CacheEntry }>();
  /** Verifications under way, so a burst of calls with one new token runs bcrypt once (a map of promises; no library needed). */
  private readonly pending = new Map<string, Promise<VerifiedKey | undefined>>();
  private lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      pool: pg.Pool;
      redis: Redis;
      cacheTtlMs: number;
      cacheSize: number;
      usageFlushMs: number;
      onError: (err: unknown) => void;
    },
  ) {
    this.timer = setInterval(() => void this.flushUsage().catch(deps.onError), deps.usageFlushMs);
    this.timer.unref();
  }

  /**
   * The key of a token this process verified recently (no I/O), else undefined. `connection`: the
   * request's socket, to remember the token per keep-alive connection.
   */
  cached(token: string, connection?: object): VerifiedKey | undefined {
    const now = Date.now();
    const remembered = connection && this.byConnection.get(connection);
    if (remembered && remembered.token === token && !remembered.entry.dead && remembered.entry.expiresAt > now)
      return remembered.entry.key;
    const digest = hash('sha256', token, 'base64');
    const hit = this.cache.get(digest);
    if (!hit || hit.expiresAt <= now) return undefined;
    // LRU: move to the end (most recently used)
    this.cache.delete(digest);
    this.cache.set(digest, hit);
    if (connection) this.byConnection.set(connection, { token, entry: hit });
    return hit.key;
  }

  /**
   * The key a token belongs to, from the cache or (first sight) from PostgreSQL + bcrypt.
   * Throws the one 401 for anything else. Does not check revocation: the caller does, per request.
   */
  async verify(token: string): Promise<VerifiedKey> {
    const prefix = lookupPrefix(token);
    if (!prefix) throw invalidKey();
    const hit = this.cached(token);
    if (hit) return hit;
    const digest = hash('sha256', token, 'base64');
    let inflight = this.pending.get(digest);
    if (!inflight) {
      inflight = this.verifyWithBcrypt(prefix, token).finally(() => this.pending.delete(digest));
      this.pending.set(digest, inflight);
    }
    const key = await inflight;
    if (!key) throw invalidKey();
    // the last await before caching: a revocation whose marker this misses is published after it,
    // and its message (handled in a later task than this continuation) removes the entry again
    const revoked = await this.deps.redis.exists(revokedMarker(key.id)).catch(() => {
      throw new AppError('UNAVAILABLE', 'Workspace API keys cannot be checked right now; retry shortly.');
    });
    if (revoked === 1) throw invalidKey();
    this.drop(digest);
    this.cache.set(digest, { key, expiresAt: Date.now() + this.deps.cacheTtlMs });
    while (this.cache.size > this.deps.cacheSize) this.drop(this.cache.keys().next().value!);
    return key;
  }

  /** Removes an entry, and from the connections that remembered it. */
  private drop(digest: string) {
    const entry = this.cache.get(digest);
    if (!entry) return;
    entry.dead = true;
    this.cache.delete(digest);
  }

  /** Forgets every cached token of a key (the revoked marker already refuses it). */
  forget(keyId: string) {
    for (const [digest, entry] of this.cache) if (entry.key.id === keyId) this.drop(digest);
  }

  /** Forgets every cached token (the revocation feed may have missed revocations). */
  clear() {
    for (const entry of this.cache.values()) entry.dead = true;
    this.cache.clear();
  }

  touch(keyId: string) {
    this.lastUsed.set(keyId, Date.now());
  }

  async flushUsage(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const batch = this.lastUsed;
    this.lastUsed = new Map();
    await recordKeyUsage(this.deps.pool, new Map([...batch].map(([id, at]) => [id, new Date(at)])));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushUsage().catch(this.deps.onError);
  }

  private async verifyWithBcrypt(prefix: string, token: string): Promise<VerifiedKey | undefined> {
    const stored = await findKeyByPrefix(this.deps.pool, prefix);
    if (!stored || !(await bcrypt.compare(token, stored.tokenHash))) return undefined;
    return {
      id: stored.id,
      prefix: stored.prefix,
      scopes: stored.scopes,
      workspace: { id: stored.workspaceId, slug: stored.workspaceSlug },
    };
  }
}

/**
 * Revokes a key of a workspace, in one transaction that holds the key's row:
 *
 * 1. marks it revoked in Redis (re-verification and replicas that cannot trust their revocation
 *    feed refuse it from now on);
 * 2. announces the revocation to every replica and waits for them (`announce`, see
 *    domain/access/key-revocations.ts): from then on no replica serves it from its cache;
 * 3. deletes its row (§3.1: the record is removed) and commits.
 *
 * If Redis cannot be reached, nothing is deleted, the marker is taken back, and the caller gets an
 * error: never a key that half works.
 */
export async function revokeApiKey(
  deps: { pool: pg.Pool; redis: Redis; announce: (keyId: string) => Promise<void> },
  workspaceId: string,
  keyId: string,
): Promise<boolean> {
  return withTransaction(deps.pool, async (db) => {
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM workspace_api_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
      [keyId, workspaceId],
    );
    if (!rows[0]) return false;
    await deps.redis.set(revokedMarker(keyId), '1', 'EX', REVOKED_MARKER_TTL_SECONDS);
    try {
      await deps.announce(keyId);
    } catch (err) {
      await deps.redis.del(revokedMarker(keyId)).catch(() => {});
      const unavailable = new AppError(
        'UNAVAILABLE',
        'The key could not be revoked on every API replica right now; nothing changed. Retry shortly.',
      );
      throw Object.assign(unavailable, { cause: err });
    }
    await db.query('DELETE FROM workspace_api_keys WHERE id = $1', [keyId]);
    return true;
  });
}
