/**
 * This dispatcher's lease (domain/webhooks/dispatcher-leases.ts): taken before its first read,
 * renewed every quarter of its length on a timer of its own (a slow sweep or a busy Temporal must
 * not let it lapse), given up on a clean stop. Its length is WEBHOOK_SWEEP_AFTER: a dispatcher that
 * died leaves its pending deliveries to the others' sweepers at most that long after its last renewal.
 */
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { releaseDispatcherLease, renewDispatcherLease } from '../../domain/webhooks/dispatcher-leases.js';

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
