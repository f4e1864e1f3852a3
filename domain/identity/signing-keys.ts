/**
 * The OpenID provider's signing keys (RS256: what Odoo's OCA `auth_oidc` verifies ID tokens with).
 * Kept in PostgreSQL, each private JWK sealed with SECRETS_KEY, so a restart or a second replica
 * signs with the same key and tokens issued before stay valid. A rotation adds a new key that signs
 * from then on; the retired one stays in the JWKS for RETIRED_KEY_GRACE_MS (longer than any token it
 * signed lives), so relying parties that cached the old JWKS keep verifying.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { open, purposeKey, seal } from '../../lib/secret-box.js';

/** A private JWK as `oidc-provider` takes it in `jwks.keys`. */
export type PrivateJwk = Record<string, string>;

/** How long a retired key stays published: a day covers every token and cached JWKS. */
export const RETIRED_KEY_GRACE_MS = 24 * 3600 * 1000;

/** How often the auth service reads the published keys again: a rotation is in use, everywhere, within this. */
export const SIGNING_KEYS_REFRESH_MS = 5_000;

const sealingKey = (secretsKey: string) => purposeKey(secretsKey, 'oidc-signing-keys');

function newRsaJwk(): PrivateJwk {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' }) as PrivateJwk;
  return { ...jwk, kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

async function insertKey(q: pg.PoolClient, secretsKey: string): Promise<string> {
  const jwk = newRsaJwk();
  await q.query('UPDATE oidc_signing_keys SET retired_at = now() WHERE retired_at IS NULL');
  await q.query('INSERT INTO oidc_signing_keys (kid, sealed_jwk) VALUES ($1, $2)', [
    jwk.kid,
    seal(JSON.stringify(jwk), sealingKey(secretsKey)),
  ]);
  return jwk.kid!;
}

/**
 * The keys to publish, the signing one first (oidc-provider signs with the first key of the
 * algorithm). The first start creates one; concurrent starts agree through an advisory lock.
 */
export async function signingKeys(pool: pg.Pool, secretsKey: string): Promise<PrivateJwk[]> {
  return withTransaction(pool, async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('oidc_signing_keys'))");
    const active = await q.query('SELECT 1 FROM oidc_signing_keys WHERE retired_at IS NULL');
    if (active.rowCount === 0) await insertKey(q, secretsKey);
    const { rows } = await q.query<{ sealed_jwk: string }>(
      `SELECT sealed_jwk FROM oidc_signing_keys
        WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => $1)
        ORDER BY retired_at DESC NULLS FIRST, created_at DESC`,
      [RETIRED_KEY_GRACE_MS / 1000],
    );
    return rows.map((r) => JSON.parse(open(r.sealed_jwk, sealingKey(secretsKey))) as PrivateJwk);
  });
}

/** Starts signing with a new key; the previous one stays published for the grace period. Answers the new key's id. */
export async function rotateSigningKey(pool: pg.Pool, secretsKey: string): Promise<string> {
  return withTransaction(pool, async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('oidc_signing_keys'))");
    return insertKey(q, secretsKey);
  });
}

/** A published key as an operator sees it (its id is public: it is in the JWKS; never the key). */
export interface PublishedSigningKey {
  kid: string;
  state: 'signing' | 'retired';
  createdAt: string;
  /** When a retired key leaves the JWKS. */
  unpublishedAt: string | null;
}

/** The keys the provider publishes, the signing one first. */
export async function publishedSigningKeys(pool: pg.Pool): Promise<PublishedSigningKey[]> {
  const { rows } = await pool.query<{ kid: string; created_at: Date; retired_at: Date | null }>(
    `SELECT kid, created_at, retired_at FROM oidc_signing_keys
      WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => $1)
      ORDER BY retired_at DESC NULLS FIRST, created_at DESC`,
    [RETIRED_KEY_GRACE_MS / 1000],
  );
  return rows.map((r) => ({
    kid: r.kid,
    state: r.retired_at ? 'retired' : 'signing',
    createdAt: r.created_at.toISOString(),
    unpublishedAt: r.retired_at ? new Date(r.retired_at.getTime() + RETIRED_KEY_GRACE_MS).toISOString() : null,
  }));
}
