/**
 * The sweeper: deliveries still pending after WEBHOOK_SWEEP_AFTER (their dispatcher died between
 * recording and attempting them, or their endpoint's lane was full) go to their retry workflows.
 * Deliveries this process still holds are left alone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { handOverStalePendingDeliveries } from '../../domain/webhooks/deliveries.js';
import { startRetry, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import { deliveryKey } from './endpoint-lanes.js';

export interface SweeperDeps {
  pool: Pool;
  starter: RetryStarter;
  sweepAfterMs: number;
  /** Deliveries this process holds (endpoint-lanes.ts deliveryKey). */
  held: ReadonlySet<string>;
  signal: AbortSignal;
  log: Logger;
}

export class StaleDeliverySweeper {
  constructor(private readonly deps: SweeperDeps) {}

  /** Sweeps every quarter of WEBHOOK_SWEEP_AFTER (250 ms to 30 s) until the signal aborts. */
  async run(): Promise<void> {
    const { signal, sweepAfterMs } = this.deps;
    const every = Math.max(250, Math.min(sweepAfterMs / 4, 30_000));
    while (!signal.aborted) {
      await sleep(every, undefined, { signal }).catch(() => {});
      if (!signal.aborted) await this.sweep();
    }
  }

  async sweep(): Promise<void> {
    const { pool, starter, held, log } = this.deps;
    try {
      const handed = await handOverStalePendingDeliveries(pool, this.deps.sweepAfterMs, async (stale) => {
        const swept = stale.filter((d) => !held.has(deliveryKey(d.endpointId, d.messageId)));
        for (const d of swept) await startRetry(starter, { ...d, trigger: 'retry' });
        return swept;
      });
      if (handed > 0) log.info({ deliveries: handed }, 'pending deliveries handed to their retry workflows');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'sweeping pending deliveries failed');
    }
  }
}
