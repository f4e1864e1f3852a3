/**
 * First start: every live pair of the inventory without a current key gets one, generated here,
 * registered `current` at the target (hash only) and stored as the current version in the secret
 * store, in one transaction. Idempotent and safe to run from several processes at once (an advisory
 * lock); run by `npm run db:migrate` (also the migrate container), `npm run dev` and the test setup.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { pairName, SERVICE_KEY_INVENTORY, type ServiceKeyPair } from './inventory.js';
import { createKey, registerKey } from './registry.js';
import type { TransactionalSecretStoreWriter } from './secret-store.js';

const LOCK_ID = 7_233_010;

/**
 * Returns the pairs that got a new key. `seeds` (by pairName) gives a pair its first key instead of
 * a random one: a pair whose key existed before it was in the registry (erp → event-ingestion: the
 * tokens in the tenants' rules were made from a key derived from SECRETS_KEY, legacyKeySeeds in
 * domain/webhooks/ingestion.ts), so what holds it keeps working until the first rotation.
 */
export async function ensureServiceKeys(
  pool: pg.Pool,
  store: TransactionalSecretStoreWriter,
  pairs: readonly Pick<ServiceKeyPair, 'caller' | 'target'>[] = SERVICE_KEY_INVENTORY.filter((p) => p.live),
  seeds: Readonly<Record<string, string>> = {},
): Promise<{ caller: string; target: string; keyId: string }[]> {
  return withTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    const created: { caller: string; target: string; keyId: string }[] = [];
    for (const pair of pairs) {
      const { rows } = await c.query(
        `SELECT 1 FROM service_keys k JOIN service_key_secrets s ON s.key_id = k.key_id AND s.is_current
          WHERE k.caller = $1 AND k.target = $2 AND k.state = 'current'`,
        [pair.caller, pair.target],
      );
      if (rows.length) continue;
      // a current key whose secret is lost can never be sent again: retire it so a new one can be current
      await c.query(
        `UPDATE service_keys SET state = 'revoked', revoked_at = now() WHERE caller = $1 AND target = $2 AND state = 'current'`,
        [pair.caller, pair.target],
      );
      // a seed is the pair's very first key only
      const { rows: before } = await c.query(`SELECT 1 FROM service_keys WHERE caller = $1 AND target = $2 LIMIT 1`, [pair.caller, pair.target]);
      const seed = before.length ? undefined : seeds[pairName(pair)];
      const { key, record } = seed ? { key: seed, record: await registerKey(c, pair, seed, 'current') } : await createKey(c, pair, 'current');
      await store.put(pair.caller, pair.target, { key, keyId: record.keyId }, true, c);
      created.push({ ...pair, keyId: record.keyId });
    }
    return created;
  });
}
