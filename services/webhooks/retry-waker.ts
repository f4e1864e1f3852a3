/**
 * Tells endpoints' retry workflows (`webhook-endpoint-retries-<endpointId>`) when their next
 * recorded failure is due: the failures of one endpoint within FLUSH_AFTER_MS go in one
 * signal-with-start carrying the earliest due time, and none is sent while a due time already told
 * is earlier and still ahead (the workflow's run at that time finds the later ones in PostgreSQL).
 * A signal that fails is logged: the sweeper tells the workflow once the delivery is overdue.
 */
import type { Logger } from '../../lib/logger.js';
import { wakeEndpointRetries, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { EndpointToWake } from '../../domain/webhooks/retry-queue.js';

const FLUSH_AFTER_MS = 50;

export class RetryWaker {
  /** Per endpoint: the earliest due time told to its workflow that is still ahead. */
  private readonly told = new Map<string, number>();
  private readonly waiting = new Map<string, { endpoint: EndpointToWake; dueAt: number }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly starter: RetryStarter,
    private readonly log: Logger,
  ) {}

  /** A failure of `endpoint`, recorded with its next attempt due at `dueAt` (epoch ms). */
  due(endpoint: EndpointToWake, dueAt: number): void {
    const told = this.told.get(endpoint.endpointId);
    if (told !== undefined && told > Date.now() && told <= dueAt) return;
    const w = this.waiting.get(endpoint.endpointId);
    if (!w || dueAt < w.dueAt) this.waiting.set(endpoint.endpointId, { endpoint, dueAt });
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
  }

  /** Sends the signals waiting now. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.waiting.values()];
    this.waiting.clear();
    this.flushing = this.flushing.then(() =>
      Promise.all(
        batch.map(async ({ endpoint, dueAt }) => {
          try {
            await wakeEndpointRetries(this.starter, endpoint, { dueAt });
            const told = this.told.get(endpoint.endpointId);
            if (told === undefined || told <= Date.now() || dueAt < told) this.told.set(endpoint.endpointId, dueAt);
          } catch (err) {
            this.log.error(
              { err: (err as Error).message, endpointId: endpoint.endpointId },
              'could not tell the endpoint retry workflow; the sweeper will once the delivery is overdue',
            );
          }
        }),
      ).then(() => {}),
    );
    return this.flushing;
  }
}
