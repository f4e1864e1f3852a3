/**
 * First start: every live pair of the inventory whose consumer holds no accepted key (none in the
 * secret store, or a revoked one) gets a new current key, generated here,
 * registered `current` at the target (hash only) and stored as the current version in the secret
 * store, in one transaction. Idempotent and safe to run from several processes at once (an advisory
 * lock); run by `npm run db:migrate` (also the migrate container), `npm run dev` and the test setup.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { SERVICE_KEY_INVENTORY, type ServiceKeyPair } from './inventory.js';
import { createKey } from './key-registry.js';
import type { TransactionalSecretStoreWriter } from './secret-store.js';

const LOCK_ID = 7_233_010;

/** Returns the pairs that got a new key. */
export async function ensureServiceKeys(
  pool: pg.Pool,
  store: TransactionalSecretStoreWriter,
  pairs: readonly Pick<ServiceKeyPair, 'caller' | 'target'>[] = SERVICE_KEY_INVENTORY.filter((p) => p.live),
): Promise<{ caller: string; target: string; keyId: string }[]> {
  return withTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    const created: { caller: string; target: string; keyId: string }[] = [];
    for (const pair of pairs) {
      // the consumer's current secret is a key the target accepts: nothing to do. Between a
      // rotation's switch and its end that key is the pending one (the registry's current key is
      // the old one, its secret no longer current): a restart then must leave both alone
      const { rows } = await c.query(
        `SELECT 1 FROM service_key_secrets s JOIN service_keys k ON k.key_id = s.key_id AND k.state <> 'revoked'
          WHERE s.caller = $1 AND s.target = $2 AND s.is_current`,
        [pair.caller, pair.target],
      );
      if (rows.length) continue;
      // a current key whose secret is lost can never be sent again: retire it so a new one can be current
      await c.query(
        `UPDATE service_keys SET state = 'revoked', revoked_at = now() WHERE caller = $1 AND target = $2 AND state = 'current'`,
        [pair.caller, pair.target],
      );
      const { key, record } = await createKey(c, pair, 'current');
      await store.put(pair.caller, pair.target, { key, keyId: record.keyId }, true, c);
      created.push({ ...pair, keyId: record.keyId });
    }
    return created;
  });
}
