/**
 * Dispatcher leases (table webhook_dispatchers): a running dispatcher renews its lease well before
 * it lapses; the pending deliveries it recorded name it (webhook_deliveries.dispatcher). Another
 * dispatcher's sweeper takes a pending delivery only once its holder's lease has lapsed (or was
 * given up on a clean stop), so a delivery waiting in a live dispatcher's lane is never sent twice.
 */
import type { Pool } from 'pg';
import type { Logger } from '../../lib/logger.js';

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

/**
 * DispatcherLease, a dispatcher's own lease: taken before its first read, renewed every quarter of
 * its length on a timer of its own (a slow sweep or a busy Temporal must not let it lapse), given up on a clean stop. Its length is WEBHOOK_SWEEP_AFTER: a dispatcher that
 * died leaves its pending deliveries to the others' sweepers at most that long after its last renewal.
 */
export class DispatcherLease {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly consumer: string,
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {}

  /** Takes the lease (throws when the database cannot be reached), then keeps renewing it. */
  async take(): Promise<void> {
    await renewDispatcherLease(this.pool, this.consumer, this.ttlMs);
    this.timer = setInterval(() => void this.renew(), Math.max(100, this.ttlMs / 4));
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await releaseDispatcherLease(this.pool, this.consumer).catch((err: Error) =>
      this.log.warn({ err: err.message }, 'could not give up the dispatcher lease; it lapses on its own'),
    );
  }

  private async renew() {
    try {
      await renewDispatcherLease(this.pool, this.consumer, this.ttlMs);
    } catch (err) {
      this.log.error(
        { err: (err as Error).message },
        'renewing the dispatcher lease failed; if it lapses, other dispatchers may send what this one holds',
      );
    }
  }
}
