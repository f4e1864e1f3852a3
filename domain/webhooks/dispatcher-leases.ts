/**
 * Dispatcher leases (table webhook_dispatchers): a running dispatcher renews its lease well before
 * it lapses; the pending deliveries it recorded name it (webhook_deliveries.dispatcher). Another
 * dispatcher's sweeper takes a pending delivery only once its holder's lease has lapsed (or was
 * given up on a clean stop), so a delivery waiting in a live dispatcher's lane is never sent twice.
 */
import type { Pool } from 'pg';

/** Takes or renews `consumer`'s lease for `ttlMs` from now (the database's clock). */
export async function renewDispatcherLease(pool: Pool, consumer: string, ttlMs: number): Promise<void> {
  // lapsed leases (dispatchers that died) are dropped on the way: a missing lease counts as lapsed
  await pool.query(
    `WITH lapsed AS (DELETE FROM webhook_dispatchers WHERE lease_until < now() - interval '1 hour')
     INSERT INTO webhook_dispatchers (consumer, lease_until) VALUES ($1, now() + $2::bigint * interval '1 millisecond')
     ON CONFLICT (consumer) DO UPDATE SET lease_until = EXCLUDED.lease_until`,
    [consumer, ttlMs],
  );
}

/** Gives the lease up (a clean stop): what the dispatcher still holds pending is the others' to sweep. */
export async function releaseDispatcherLease(pool: Pool, consumer: string): Promise<void> {
  await pool.query('DELETE FROM webhook_dispatchers WHERE consumer = $1', [consumer]);
}
