/**
 * Verifying workspace API keys fast without letting a revocation be outlived:
 *
 * - bcrypt (≈ 80 ms at cost 10) runs only the first time a process sees a token; after that the
 *   process trusts an in-memory LRU entry keyed by the token's SHA-256 (never the token itself)
 *   for at most API_KEY_CACHE_TTL_SECONDS;
 * - revocation is checked on every request anyway: revoking sets a marker in Redis before the key's
 *   row is deleted, and each request reads it (in the same atomic Redis call as the rate limit,
 *   lib/rate-limits.ts), so the very next request on any replica gets 401. The marker lives far
 *   longer than any cache entry;
 * - last_used_at is kept in memory per key and written to PostgreSQL every API_KEY_USAGE_FLUSH_MS
 *   by one UPDATE for all keys used meanwhile (never a write per request).
 */
import { createHash } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { findKeyByPrefix, lookupPrefix, recordKeyUsage } from './api-keys.js';
import { withTransaction } from './db.js';
import { AppError } from './errors.js';
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

export class ApiKeyVerifier {
  private readonly cache = new Map<string, { key: VerifiedKey; expiresAt: number }>();
  private readonly pending = new Map<string, Promise<VerifiedKey | undefined>>();
  private lastUsed = new Map<string, Date>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: { pool: pg.Pool; cacheTtlMs: number; cacheSize: number; usageFlushMs: number; onError: (err: unknown) => void },
  ) {
    this.timer = setInterval(() => void this.flushUsage().catch(deps.onError), deps.usageFlushMs);
    this.timer.unref();
  }

  /** The key of a token this process verified recently (no I/O), else undefined. */
  cached(token: string): VerifiedKey | undefined {
    const digest = createHash('sha256').update(token).digest('base64');
    const hit = this.cache.get(digest);
    if (!hit || hit.expiresAt <= Date.now()) return undefined;
    // LRU: move to the end (most recently used)
    this.cache.delete(digest);
    this.cache.set(digest, hit);
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
    const digest = createHash('sha256').update(token).digest('base64');
    let inflight = this.pending.get(digest);
    if (!inflight) {
      inflight = this.verifyWithBcrypt(prefix, token).finally(() => this.pending.delete(digest));
      this.pending.set(digest, inflight);
    }
    const key = await inflight;
    if (!key) throw invalidKey();
    this.cache.delete(digest);
    this.cache.set(digest, { key, expiresAt: Date.now() + this.deps.cacheTtlMs });
    while (this.cache.size > this.deps.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    return key;
  }

  /** Forgets every cached token of a key (the revoked marker already refuses it). */
  forget(keyId: string) {
    for (const [digest, entry] of this.cache) if (entry.key.id === keyId) this.cache.delete(digest);
  }

  touch(keyId: string) {
    this.lastUsed.set(keyId, new Date());
  }

  async flushUsage(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const batch = this.lastUsed;
    this.lastUsed = new Map();
    await recordKeyUsage(this.deps.pool, batch);
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
 * Revokes a key of a workspace: marks it revoked in Redis (every replica refuses it from the next
 * request on), then deletes its row (§3.1: the record is removed), in one transaction: if Redis
 * cannot be reached nothing is deleted and the caller gets an error, never a key that half works.
 */
export async function revokeApiKey(pool: pg.Pool, redis: Redis, workspaceId: string, keyId: string): Promise<boolean> {
  return withTransaction(pool, async (db) => {
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM workspace_api_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
      [keyId, workspaceId],
    );
    if (!rows[0]) return false;
    await redis.set(revokedMarker(keyId), '1', 'EX', REVOKED_MARKER_TTL_SECONDS);
    await db.query('DELETE FROM workspace_api_keys WHERE id = $1', [keyId]);
    return true;
  });
}
