/**
 * The consumer side: where a caller gets the key it sends to a target. Consumers read through the
 * SecretStore interface only, per call (a cached read), so a new current version reaches them
 * without a restart (step 3 of a rotation, "roll the consumer").
 *
 * Locally (and in tests) it is PgSecretStore: versions per caller/target pair in
 * service_key_secrets, sealed with SECRETS_KEY (lib/secret-box.ts), the current one marked, read
 * through a cache with a short TTL (SERVICE_KEY_SECRET_TTL_MS).
 *
 * In production (SECRET_STORE=kubernetes, kubernetes-secret-*.ts): consumers read a mounted
 * Kubernetes Secret (KubernetesSecretVolume), and the rotation writes through
 * KubernetesPublishingStore (secret-store-factory.ts): versions recorded here, sealed, in the
 * rotation's transaction, then published to the Secret through the Kubernetes API when one becomes
 * current. A Vault KV v2 store would implement the same two interfaces.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { open, seal } from '../../lib/secret-box.js';

export interface ServiceKeySecret {
  /** The key, for the X-API-Key header only: never log it. */
  key: string;
  keyId: string;
  version: number;
}

/** What consumers use. */
export interface SecretStore {
  /** The current key caller sends to target; throws when there is none. */
  current(caller: string, target: string): Promise<ServiceKeySecret>;
  /** Forgets cached values (the next read goes to the store). */
  invalidate(): void;
}

/** What bootstrap and the rotation use. */
export interface SecretStoreWriter {
  /** Stores a new version (not current unless `makeCurrent`); returns its version number. */
  put(caller: string, target: string, secret: { key: string; keyId: string }, makeCurrent: boolean): Promise<number>;
  /** Marks a version current (step 3: the consumer's next read picks it up). Idempotent. */
  makeCurrent(caller: string, target: string, version: number): Promise<void>;
  /** The versions of a pair without their keys (newest first). */
  versions(
    caller: string,
    target: string,
  ): Promise<{ version: number; keyId: string; isCurrent: boolean; createdAt: Date }[]>;
}

/**
 * What the rotation and the bootstrap write through: `put` may join the caller's transaction
 * (`db`), so the new key and its registry record commit together.
 */
export interface TransactionalSecretStoreWriter extends SecretStoreWriter {
  put(
    caller: string,
    target: string,
    secret: { key: string; keyId: string },
    makeCurrent: boolean,
    db?: Queryable,
  ): Promise<number>;
}

export class PgSecretStore implements SecretStore, TransactionalSecretStoreWriter {
  private cache = new Map<string, { value: ServiceKeySecret; until: number }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly secretsKey: string,
    private readonly ttlMs = 5_000,
  ) {}

  async current(caller: string, target: string): Promise<ServiceKeySecret> {
    const slot = `${caller} ${target}`;
    const hit = this.cache.get(slot);
    if (hit && hit.until > Date.now()) return hit.value;
    const { rows } = await this.pool.query<{ version: number; key_id: string; sealed: string }>(
      `SELECT version, key_id, sealed FROM service_key_secrets WHERE caller = $1 AND target = $2 AND is_current`,
      [caller, target],
    );
    const row = rows[0];
    if (!row) {
      throw new AppError(
        'UNAVAILABLE',
        `No service key for ${caller} → ${target} in the secret store (run the bootstrap: npm run db:migrate).`,
      );
    }
    const value = { key: open(row.sealed, this.secretsKey), keyId: row.key_id, version: row.version };
    this.cache.set(slot, { value, until: Date.now() + this.ttlMs });
    return value;
  }

  invalidate() {
    this.cache.clear();
  }

  async put(
    caller: string,
    target: string,
    secret: { key: string; keyId: string },
    makeCurrent: boolean,
    db?: Queryable,
  ): Promise<number> {
    const write = async (q: Queryable) => {
      const { rows } = await q.query<{ version: number }>(
        `INSERT INTO service_key_secrets (caller, target, version, key_id, sealed)
         SELECT $1, $2, COALESCE(MAX(version), 0) + 1, $3, $4 FROM service_key_secrets WHERE caller = $1 AND target = $2
         RETURNING version`,
        [caller, target, secret.keyId, seal(secret.key, this.secretsKey)],
      );
      const version = rows[0]!.version;
      if (makeCurrent) await this.markCurrent(q, caller, target, version);
      return version;
    };
    return db ? write(db) : withTransaction(this.pool, write);
  }

  async makeCurrent(caller: string, target: string, version: number): Promise<void> {
    await withTransaction(this.pool, (c) => this.markCurrent(c, caller, target, version));
    this.invalidate();
  }

  private async markCurrent(q: Queryable, caller: string, target: string, version: number) {
    await q.query(
      `UPDATE service_key_secrets SET is_current = false WHERE caller = $1 AND target = $2 AND is_current AND version <> $3`,
      [caller, target, version],
    );
    const { rowCount } = await q.query(
      `UPDATE service_key_secrets SET is_current = true WHERE caller = $1 AND target = $2 AND version = $3`,
      [caller, target, version],
    );
    if (!rowCount)
      throw new AppError('NOT_FOUND', `No version ${version} of the ${caller} → ${target} key in the secret store.`);
  }

  /** One stored version with its key (what KubernetesPublishingStore publishes). */
  async version(caller: string, target: string, version: number): Promise<ServiceKeySecret> {
    const { rows } = await this.pool.query<{ key_id: string; sealed: string }>(
      `SELECT key_id, sealed FROM service_key_secrets WHERE caller = $1 AND target = $2 AND version = $3`,
      [caller, target, version],
    );
    if (!rows[0])
      throw new AppError('NOT_FOUND', `No version ${version} of the ${caller} → ${target} key in the secret store.`);
    return { key: open(rows[0].sealed, this.secretsKey), keyId: rows[0].key_id, version };
  }

  /**
   * The keys of a pair's versions that the target's registry still accepts (pending, current,
   * previous: not revoked), newest first, and those revoked within `revokedWithinMs` (so a target
   * can tell a revoked key's use from a wrong one: the verifier refuses it and raises the
   * revoked-key alert). For a target that must hold the key material itself rather than its hash
   * (the event ingestion checks per-tenant HMAC tokens made from the key: domain/erp-events/ingestion.ts).
   */
  async acceptedVersions(
    caller: string,
    target: string,
    opts: { revokedWithinMs?: number } = {},
  ): Promise<ServiceKeySecret[]> {
    const { rows } = await this.pool.query<{ version: number; key_id: string; sealed: string }>(
      `SELECT s.version, s.key_id, s.sealed FROM service_key_secrets s JOIN service_keys k ON k.key_id = s.key_id
        WHERE s.caller = $1 AND s.target = $2
          AND (k.state <> 'revoked' OR k.revoked_at > now() - make_interval(secs => $3::double precision / 1000))
        ORDER BY s.version DESC`,
      [caller, target, opts.revokedWithinMs ?? 0],
    );
    return rows.map((r) => ({ key: open(r.sealed, this.secretsKey), keyId: r.key_id, version: r.version }));
  }

  async versions(caller: string, target: string) {
    const { rows } = await this.pool.query<{ version: number; key_id: string; is_current: boolean; created_at: Date }>(
      `SELECT version, key_id, is_current, created_at FROM service_key_secrets WHERE caller = $1 AND target = $2 ORDER BY version DESC`,
      [caller, target],
    );
    return rows.map((r) => ({ version: r.version, keyId: r.key_id, isCurrent: r.is_current, createdAt: r.created_at }));
  }
}

/** A consumer's view of one pair: the header value for the next call. */
export const serviceKeyFor = (store: SecretStore, caller: string, target: string) => async () =>
  (await store.current(caller, target)).key;
