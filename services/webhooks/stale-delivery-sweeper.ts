/**
 * The sweeper: deliveries still pending after WEBHOOK_SWEEP_AFTER (their dispatcher died between
 * recording and attempting them, or their endpoint's lane was full) go on their endpoint's retry
 * schedule, due now; endpoints with a delivery overdue by WEBHOOK_SWEEP_AFTER (their retry workflow
 * was never told: a dispatcher died between recording a failure and the signal) are told. Either
 * way the endpoint's retry workflow gets a signal-with-start. Deliveries this process still holds
 * are left alone, and so are those another live dispatcher holds (its lease runs: they may wait in
 * its lanes).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import {
  overdueEndpoints,
  scheduleStalePendingDeliveries,
  type EndpointToWake,
} from '../../domain/webhooks/deliveries.js';
import { deliveryKey } from './first-attempts.js';

export interface SweeperDeps {
  pool: Pool;
  /** Tells the endpoint's retry workflow that deliveries are due now. */
  waker: (e: EndpointToWake) => Promise<void>;
  sweepAfterMs: number;
  /** This dispatcher's name (its lease: dispatcher-leases.ts). */
  consumer: string;
  /** Deliveries this process holds (first-attempts.ts deliveryKey). */
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
    const { pool, consumer, held, log, sweepAfterMs } = this.deps;
    try {
      const stale = await scheduleStalePendingDeliveries(pool, sweepAfterMs, consumer, (e, m) =>
        held.has(deliveryKey(e, m)),
      );
      const overdue = await overdueEndpoints(pool, sweepAfterMs);
      const endpoints = new Map([...stale, ...overdue].map((e) => [e.endpointId, e]));
      for (const e of endpoints.values()) await this.deps.waker(e);
      if (endpoints.size > 0)
        log.info(
          { endpoints: endpoints.size, stalePending: stale.length, overdue: overdue.length },
          'endpoint retry workflows told of deliveries due',
        );
    } catch (err) {
      log.error({ err: (err as Error).message }, 'sweeping pending deliveries failed');
    }
  }
}
