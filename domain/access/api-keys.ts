/**
 * Workspace API keys (specification §2.1, §3.1, §5.2, §5.3). A token is `ws_live_` followed by
 * 32 CSPRNG bytes in unpadded base32 (RFC 4648, `@scure/base`), 52 characters. PostgreSQL keeps
 * the bcrypt hash and a non-secret look-up prefix: `ws_live_` + the first 8 base32 characters.
 * The plaintext leaves the platform once, in the create response.
 *
 * Verification (`ApiKeyVerifier`): bcrypt (≈ 80 ms at cost 10) runs only the first time a process
 * sees a token; after that the process trusts an lru-cache entry keyed by the token's SHA-256
 * (never the token itself) for at most API_KEY_CACHE_TTL_SECONDS. Revocation (`revokeApiKey`) sets
 * a marker in Redis, tells every replica through the revocation feed (below), which
 * drops the key from their caches, and then deletes the key's row. A verification (cache miss)
 * checks the marker after bcrypt, so it cannot cache a key revoked meanwhile; while a replica
 * cannot trust its feed, every request checks the marker (in the same atomic Redis call as the
 * rate limit, workspace-limits.ts). The marker lives far longer than any cache entry. last_used_at is
 * kept in memory per key and written to PostgreSQL every API_KEY_USAGE_FLUSH_MS by one UPDATE for
 * all keys used meanwhile.
 */
import { hash, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { base32nopad } from '@scure/base';
import bcrypt from 'bcrypt';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { revokedMarker } from './workspace-limits.js';

export const TOKEN_PREFIX = 'ws_live_';
const TOKEN_PATTERN = /^ws_live_[A-Z2-7]{52}$/;
const LOOKUP_CHARS = 8;

/** §5.3: the scopes a key can hold and what each grants. */
export const SCOPES = {
  'dashboard:read': 'KPIs, cash flow, alerts (default)',
  'agents:invoke': 'POST to /api/agents/:id/chat',
  'banking:read': 'PSD2 account and transaction read',
  'webhooks:write': 'receive workspace webhooks',
  '*': 'everything (discouraged)',
} as const;
export type Scope = keyof typeof SCOPES;
export const DEFAULT_SCOPES: Scope[] = ['dashboard:read'];

export const isScope = (s: string): s is Scope => Object.hasOwn(SCOPES, s);
export const grants = (held: readonly string[], needed: Scope) => held.includes('*') || held.includes(needed);

export function generateToken(): string {
  return TOKEN_PREFIX + base32nopad.encode(randomBytes(32));
}

/** The look-up prefix of a well-formed token, or undefined for anything else. */
export function lookupPrefix(token: string): string | undefined {
  return TOKEN_PATTERN.test(token) ? token.slice(0, TOKEN_PREFIX.length + LOOKUP_CHARS) : undefined;
}

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

const columns = 'id, name, prefix, scopes, created_at AS "createdAt", last_used_at AS "lastUsedAt"';

/** Normalises a requested scope set: default when absent, 400 naming every unknown scope. */
export function checkScopes(requested: string[] | undefined): Scope[] {
  if (requested === undefined) return [...DEFAULT_SCOPES];
  const unknown = requested.filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new AppError(
      'BAD_REQUEST',
      `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; known scopes: ${Object.keys(SCOPES).join(', ')}.`,
      {
        unknownScopes: unknown,
      },
    );
  }
  if (requested.length === 0)
    throw new AppError('BAD_REQUEST', 'scopes must name at least one scope (or be left out for dashboard:read).');
  return [...new Set(requested)] as Scope[];
}

/**
 * A new key of the workspace, unless it already holds `maxKeys` live keys (409 naming the cap):
 * the per-key rate limit is not to be multiplied by making keys. The count and the insert run
 * under the workspace row's lock, so concurrent creates cannot pass the cap together.
 */
export async function createApiKey(
  pool: pg.Pool,
  opts: { workspaceId: string; name: string; scopes: Scope[]; createdBy: string; bcryptCost: number; maxKeys?: number },
): Promise<ApiKeyRow & { token: string }> {
  for (let attempt = 1; ; attempt++) {
    const token = generateToken();
    const hash = await bcrypt.hash(token, opts.bcryptCost);
    try {
      const row = await withTransaction(pool, async (db) => {
        // the lock first, the count in a statement of its own: a count in the locking statement reads
        // the snapshot taken before waiting for the lock, missing the key a concurrent create just added
        const ws = await db.query<{ slug: string }>(`SELECT slug FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, [
          opts.workspaceId,
        ]);
        const counted = await db.query<{ live: number }>(
          `SELECT count(*)::int AS live FROM workspace_api_keys WHERE workspace_id = $1`,
          [opts.workspaceId],
        );
        const live = counted.rows[0]?.live ?? 0;
        if (opts.maxKeys !== undefined && live >= opts.maxKeys) {
          throw new AppError(
            'CONFLICT',
            `Workspace "${ws.rows[0]!.slug}" already has ${live} API keys, its cap of ${opts.maxKeys}; revoke a key it no longer uses before creating another (higher caps by arrangement).`,
            { maxKeys: opts.maxKeys, liveKeys: live },
          );
        }
        const { rows } = await db.query<ApiKeyRow>(
          `INSERT INTO workspace_api_keys (workspace_id, name, prefix, token_hash, scopes, created_by)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${columns}`,
          [opts.workspaceId, opts.name, lookupPrefix(token), hash, opts.scopes, opts.createdBy],
        );
        return rows[0]!;
      });
      return { ...row, token };
    } catch (err) {
      // two tokens sharing their first 40 bits: draw again (the prefix must identify one key)
      const unique = (err as { code?: string; constraint?: string }).code === '23505';
      if (!unique || attempt >= 3) throw err;
    }
  }
}

export async function listApiKeys(pool: pg.Pool, workspaceId: string): Promise<ApiKeyRow[]> {
  const { rows } = await pool.query<ApiKeyRow>(
    `SELECT ${columns} FROM workspace_api_keys WHERE workspace_id = $1 ORDER BY created_at, id`,
    [workspaceId],
  );
  return rows;
}

/** What verification needs about a key, found by its look-up prefix. */
export interface StoredKey {
  id: string;
  prefix: string;
  tokenHash: string;
  scopes: string[];
  workspaceId: string;
  workspaceSlug: string;
}

export async function findKeyByPrefix(pool: pg.Pool, prefix: string): Promise<StoredKey | undefined> {
  const { rows } = await pool.query<StoredKey>(
    `SELECT k.id, k.prefix, k.token_hash AS "tokenHash", k.scopes, k.workspace_id AS "workspaceId", w.slug AS "workspaceSlug"
       FROM workspace_api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE k.prefix = $1`,
    [prefix],
  );
  return rows[0];
}

/** Writes the last-use times gathered in memory; never moves a time backwards. */
export async function recordKeyUsage(pool: pg.Pool, lastUsed: Map<string, Date>): Promise<void> {
  if (lastUsed.size === 0) return;
  await pool.query(
    `UPDATE workspace_api_keys k SET last_used_at = GREATEST(k.last_used_at, u.at)
       FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at) WHERE k.id = u.id`,
    [[...lastUsed.keys()], [...lastUsed.values()]],
  );
}

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
  /**
   * Verified keys by the SHA-256 of their token. `fetch` runs bcrypt once for a burst of calls
   * with one new token, and keeps nothing for a token that does not verify.
   */
  private readonly verified: LRUCache<string, VerifiedKey, string>;
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
    this.verified = new LRUCache({
      max: deps.cacheSize,
      ttl: deps.cacheTtlMs,
      fetchMethod: (_digest, _stale, { context: token }) => this.verifyWithBcrypt(token),
    });
    this.timer = setInterval(() => void this.flushUsage().catch(deps.onError), deps.usageFlushMs);
    this.timer.unref();
  }

  /** The key of a token this process verified recently (no I/O), else undefined. */
  cached(token: string): VerifiedKey | undefined {
    return this.verified.get(hash('sha256', token, 'base64'));
  }

  /**
   * The key a token belongs to, from the cache or (first sight) from PostgreSQL + bcrypt.
   * Throws the one 401 for anything else. Does not check revocation: the caller does, per request.
   */
  async verify(token: string): Promise<VerifiedKey> {
    if (!lookupPrefix(token)) throw invalidKey();
    const key = await this.verified.fetch(hash('sha256', token, 'base64'), { context: token });
    if (!key) throw invalidKey();
    return key;
  }

  /** Forgets every cached token of a key (the revoked marker already refuses it). */
  forget(keyId: string) {
    for (const [digest, key] of this.verified.entries()) if (key.id === keyId) this.verified.delete(digest);
  }

  /** Forgets every cached token (the revocation feed may have missed revocations). */
  clear() {
    this.verified.clear();
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

  /** The key of a token not seen before, or undefined; kept in the cache only once its marker said it is not revoked. */
  private async verifyWithBcrypt(token: string): Promise<VerifiedKey | undefined> {
    const stored = await findKeyByPrefix(this.deps.pool, lookupPrefix(token)!);
    if (!stored || !(await bcrypt.compare(token, stored.tokenHash))) return undefined;
    // the last await before the key is cached: a revocation whose marker this misses is published
    // after it, and its message (handled in a later task than this continuation) forgets it again
    const revoked = await this.deps.redis.exists(revokedMarker(stored.id)).catch(() => {
      throw new AppError('UNAVAILABLE', 'Workspace API keys cannot be checked right now; retry shortly.');
    });
    if (revoked === 1) return undefined;
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
 *    the revocation feed below): from then on no replica serves it from its cache;
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

/*
 * ---- the revocation feed ----
 *
 * Revoking workspace keys on every API replica at once, without a Redis call per request
 * (specification §5.2: "revocation is immediate, no grace period"; DESIGN §5).
 *
 * Every replica keeps a dedicated subscriber connection to Redis and:
 *
 * - receives each revocation on `apikey:revocations`, forgets the key's cached verification and
 *   acknowledges on the revoking replica's own channel;
 * - publishes a ping to its own channel every PING_MS and, each time one comes back, registers
 *   itself in `apikey:replicas` (a sorted set scored by Redis's clock). Redis delivers the messages of one subscriber
 *   connection in publish order, so a replica that has received its own ping published at time t
 *   has also received every revocation published before t.
 *
 * A replica trusts its cache only while it is *fresh*: its newest own ping received was published
 * less than STALE_MS ago (its own clock). Otherwise (Redis slow or gone, the event loop stalled, the
 * subscription reconnecting) the hot path checks the key's revocation marker in Redis on every
 * request, and fails closed if Redis cannot answer.
 *
 * Revoking (`announce`) publishes the revocation and returns when every registered replica has
 * acknowledged, usually within a millisecond or two, and at the latest after STALE_MS + a margin:
 * by then a replica that did not acknowledge is either no longer fresh or has received a ping
 * published after the revocation, so the very next request on any replica is refused. After a
 * reconnect the subscription may have missed revocations: the replica clears its cache when the
 * new subscription is confirmed (`onResubscribed`), and re-verification checks the marker.
 */
const CHANNEL = 'apikey:revocations';
const REGISTRY = 'apikey:replicas';
const replicaChannel = (replicaId: string) => `apikey:replica:${replicaId}`;

export const PING_MS = 200;
export const STALE_MS = 1_000;
const ANNOUNCE_MARGIN_MS = 100;
/** A replica counts as live (worth waiting for) when it registered within this window. */
const REGISTRY_WINDOW_MS = 3_000;

// both scripts use Redis's clock, so replicas on machines with skewed clocks agree
const REGISTER_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
return now
`;
const LIVE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[1]), '+inf')
`;

type Message =
  | { type: 'revoked'; id: string; keyId: string; from: string }
  | { type: 'ping'; sentAt: number }
  | { type: 'ack'; id: string; replica: string };

export interface RevocationFeedOptions {
  /** Commands: publish, register. */
  redis: Redis;
  /** A connection of its own, used for nothing but this subscription. */
  subscriber: Redis;
  /** A key was revoked (by any replica): forget what this process cached about it. */
  onRevoked: (keyId: string) => void;
  /** The subscription was re-established and may have missed revocations: forget every cached key. */
  onResubscribed: () => void;
  onError: (err: unknown) => void;
}

export class RevocationFeed {
  readonly replicaId = randomUUID();
  /** performance.now() at which this replica published the newest own ping it has received. */
  private lastPing = -Infinity;
  private readonly waiting = new Map<string, { pending: Set<string>; done: () => void }>();
  private timer?: NodeJS.Timeout;
  private subscribedOnce = false;

  private readonly scripts: {
    register: (registry: string, replicaId: string) => Promise<number>;
    live: (registry: string, windowMs: number) => Promise<string[]>;
  };

  constructor(private readonly opts: RevocationFeedOptions) {
    // defined commands run by EVALSHA: the scripts travel to Redis once, not with every ping
    const redis = opts.redis as Redis & { registerReplica?: unknown; liveReplicas?: unknown };
    if (!redis.registerReplica) redis.defineCommand('registerReplica', { numberOfKeys: 1, lua: REGISTER_LUA });
    if (!redis.liveReplicas) redis.defineCommand('liveReplicas', { numberOfKeys: 1, lua: LIVE_LUA });
    const commands = redis as unknown as {
      registerReplica: RevocationFeed['scripts']['register'];
      liveReplicas: RevocationFeed['scripts']['live'];
    };
    this.scripts = { register: commands.registerReplica.bind(redis), live: commands.liveReplicas.bind(redis) };
  }

  async start(): Promise<void> {
    const { subscriber } = this.opts;
    subscriber.on('message', (_channel: string, raw: string) => this.onMessage(raw));
    // lost connection: stop trusting the cache at once; when it is back, subscribe again and clear
    subscriber.on('close', () => {
      this.lastPing = -Infinity;
    });
    subscriber.on('ready', () => {
      if (this.subscribedOnce) void this.subscribe().catch(this.opts.onError);
    });
    await this.subscribe();
    this.timer = setInterval(() => void this.ping().catch(this.opts.onError), PING_MS);
    this.timer.unref();
    await this.ping();
  }

  /** May the cache be trusted without asking Redis about revocation? */
  fresh(): boolean {
    return performance.now() - this.lastPing < STALE_MS;
  }

  /**
   * Tells every replica that a key is revoked and waits until all registered replicas acknowledged,
   * or until STALE_MS + a margin passed (see the module comment). Throws if it cannot publish.
   */
  async announce(keyId: string): Promise<void> {
    const id = randomUUID();
    const live = await this.scripts.live(REGISTRY, REGISTRY_WINDOW_MS);
    const started = performance.now();
    const acknowledged = new Promise<void>((resolve) =>
      this.waiting.set(id, { pending: new Set(live), done: resolve }),
    );
    try {
      const message: Message = { type: 'revoked', id, keyId, from: this.replicaId };
      await this.opts.redis.publish(CHANNEL, JSON.stringify(message));
      const left = STALE_MS + ANNOUNCE_MARGIN_MS - (performance.now() - started);
      const timeout = new AbortController();
      await Promise.race([
        acknowledged,
        sleep(Math.max(0, left), undefined, { signal: timeout.signal }).catch(() => {}),
      ]);
      timeout.abort();
    } finally {
      this.waiting.delete(id);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.opts.subscriber.disconnect();
    await this.opts.redis.zrem(REGISTRY, this.replicaId).catch(() => {});
  }

  private async subscribe() {
    await this.opts.subscriber.subscribe(CHANNEL, replicaChannel(this.replicaId));
    // revocations published while the subscription was down were missed: nothing cached before
    // this point may be trusted (re-verification checks the revocation marker)
    if (this.subscribedOnce) this.opts.onResubscribed();
    this.subscribedOnce = true;
  }

  private async ping() {
    const message: Message = { type: 'ping', sentAt: performance.now() };
    await this.opts.redis.publish(replicaChannel(this.replicaId), JSON.stringify(message));
  }

  private onMessage(raw: string) {
    let message: Message;
    try {
      message = JSON.parse(raw) as Message;
    } catch {
      return;
    }
    if (message.type === 'ping') {
      this.lastPing = Math.max(this.lastPing, message.sentAt);
      // registered only while its own pings come back: a replica that cannot hear revocations is
      // not waited for (and does not trust its cache either)
      void this.scripts.register(REGISTRY, this.replicaId).catch(this.opts.onError);
    } else if (message.type === 'revoked') {
      this.opts.onRevoked(message.keyId);
      const ack: Message = { type: 'ack', id: message.id, replica: this.replicaId };
      void this.opts.redis.publish(replicaChannel(message.from), JSON.stringify(ack)).catch(this.opts.onError);
    } else if (message.type === 'ack') {
      const wait = this.waiting.get(message.id);
      if (!wait) return;
      wait.pending.delete(message.replica);
      if (wait.pending.size === 0) wait.done();
    }
  }
}
