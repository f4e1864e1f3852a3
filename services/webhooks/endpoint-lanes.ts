/**
 * First attempts, per endpoint: each endpoint has a lane (a queue and the attempts it has in
 * flight), at most WEBHOOK_ENDPOINT_CONCURRENCY at a time, so a slow endpoint queues its own work
 * only. A full lane (WEBHOOK_ENDPOINT_QUEUE_MAX) refuses a delivery: it stays pending, and the
 * sweeper hands it to Temporal. The lanes also count what the process holds, so the stream consumer
 * waits while WEBHOOK_MAX_IN_FLIGHT attempts are unfinished.
 */
import type { SendingEndpoint } from '../../domain/webhooks/endpoints.js';

export interface FirstAttemptJob {
  endpoint: SendingEndpoint;
  messageId: string;
  eventType: string;
  payload: string;
}

/** Makes one attempt; calls `answered` once the endpoint answered (its slot is free then). */
export type MakeAttempt = (job: FirstAttemptJob, answered: () => void) => Promise<void>;

export interface LaneLimits {
  WEBHOOK_ENDPOINT_CONCURRENCY: number;
  WEBHOOK_ENDPOINT_QUEUE_MAX: number;
  WEBHOOK_MAX_IN_FLIGHT: number;
}

export const deliveryKey = (endpointId: string, messageId: string) => `${endpointId}:${messageId}`;

export class EndpointLanes {
  private readonly lanes = new Map<string, { active: number; queue: FirstAttemptJob[] }>();
  /** Attempts taken and not finished (queued, sending, or telling the retry workflow). */
  inFlight = 0;
  /** Deliveries this process holds (queued, in flight, or attempted and not yet recorded): not for the sweeper. */
  readonly held = new Set<string>();
  private idle: (() => void) | undefined;

  constructor(
    private readonly limits: LaneLimits,
    private readonly attempt: MakeAttempt,
  ) {}

  /** Queues a first attempt; false when the endpoint's lane is full (the delivery stays pending). */
  enqueue(job: FirstAttemptJob): boolean {
    let lane = this.lanes.get(job.endpoint.id);
    if (!lane) this.lanes.set(job.endpoint.id, (lane = { active: 0, queue: [] }));
    if (lane.queue.length >= this.limits.WEBHOOK_ENDPOINT_QUEUE_MAX) return false; // left pending: the sweeper hands it to Temporal
    lane.queue.push(job);
    this.held.add(deliveryKey(job.endpoint.id, job.messageId));
    this.inFlight++;
    this.pump(job.endpoint.id);
    return true;
  }

  /** The delivery's attempt is recorded (or its recording failed): the sweeper may take it from here. */
  release(endpointId: string, messageId: string): void {
    this.held.delete(deliveryKey(endpointId, messageId));
  }

  /** Resolves once fewer than WEBHOOK_MAX_IN_FLIGHT attempts are unfinished (or `signal` aborted). */
  async waitForRoom(signal: AbortSignal): Promise<void> {
    while (this.inFlight >= this.limits.WEBHOOK_MAX_IN_FLIGHT && !signal.aborted)
      await new Promise<void>((r) => (this.idle = r));
  }

  /** Lets a waitForRoom look again (on close). */
  wake(): void {
    this.idle?.();
  }

  private pump(endpointId: string) {
    const lane = this.lanes.get(endpointId)!;
    while (lane.active < this.limits.WEBHOOK_ENDPOINT_CONCURRENCY && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      lane.active++;
      // the endpoint's slot is free once its answer is in; telling Temporal of a 410 happens
      // outside the slot (a slow signal must not hold up the endpoint's next deliveries)
      void this.attempt(job, () => {
        lane.active--;
        if (lane.active === 0 && lane.queue.length === 0) this.lanes.delete(endpointId);
        else this.pump(endpointId);
      }).finally(() => {
        this.inFlight--;
        if (this.inFlight < this.limits.WEBHOOK_MAX_IN_FLIGHT) this.idle?.();
      });
    }
  }
}
