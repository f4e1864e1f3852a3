/**
 * The dispatcher's first attempts: the endpoint lanes that queue them, the attempt and what follows
 * it (a failure's retry workflow told), and the recorder that writes the attempts in batches.
 *
 * Lanes: each endpoint has a lane (a queue and the attempts it has in
 * flight), at most WEBHOOK_ENDPOINT_CONCURRENCY at a time, so a slow endpoint queues its own work
 * only. A full lane (WEBHOOK_ENDPOINT_QUEUE_MAX) refuses a delivery: it stays pending, and the
 * sweeper hands it to Temporal. The lanes also count what the process holds, so the stream consumer
 * waits while WEBHOOK_MAX_IN_FLIGHT attempts are unfinished.
 *
 * Recorder: attempts are recorded as a group commit: an attempt is written by the next statement that
 * starts, and a statement starts as soon as the previous one is done (one at a time: two could
 * update the same endpoints' rows in opposite orders; up to BATCH_MAX attempts each). A quiet
 * dispatcher writes each attempt right away; a busy one writes whatever came in while the previous
 * statement ran. The time between an answer and its record (what a killed dispatcher sends again)
 * is one statement, not a timer.
 */
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { attemptDelivery, retrySettings, type AttemptDeps } from '../../domain/webhooks/attempt-delivery.js';
import { recordAttempts, type RecordedAttempt } from '../../domain/webhooks/deliveries.js';
import { RetryWaker, wakeEndpointRetries, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { SendingEndpoint } from '../../domain/webhooks/endpoints.js';
import type { WebhookSender } from '../../domain/webhooks/http-sender.js';
import type { EventTrace } from '../../domain/events/events.js';
import { inTraceOf } from '../../lib/tracing.js';

/**
 * The first attempts' parts: the endpoint lanes, the recorder (a recorded attempt's delivery leaves
 * the lanes' held set) and the retry waker.
 */
export function firstAttempts(cfg: Config, pool: Pool, sender: WebhookSender, starter: RetryStarter, log: Logger) {
  const waker = new RetryWaker(starter, log);
  const recorder = new AttemptRecorder(pool, log, (a) => lanes.release(a.endpointId, a.messageId));
  const parts: FirstAttemptParts = {
    attempt: { sender, userAgent: cfg.WEBHOOK_USER_AGENT, settings: retrySettings(cfg) },
    starter,
    waker,
    recorder,
    log,
  };
  const lanes: EndpointLanes = new EndpointLanes(cfg, (job, answered) => firstAttempt(parts, job, answered));
  return { lanes, recorder, waker };
}

interface FirstAttemptParts {
  attempt: AttemptDeps;
  starter: RetryStarter;
  waker: RetryWaker;
  recorder: AttemptRecorder;
  log: Logger;
}

/**
 * A delivery's first attempt. A failure is recorded with the due time of its first retry, and then
 * the endpoint's retry workflow is told (if this process dies in between, the sweeper tells it once
 * the delivery is overdue). A 410 Gone tells the workflow first, which disables the endpoint; if
 * that fails the delivery stays pending, and the sweeper puts it on the schedule.
 */
async function firstAttempt(p: FirstAttemptParts, job: FirstAttemptJob, answered: () => void): Promise<void> {
  const { endpoint, messageId, payload } = job;
  // in the trace of the event that caused it (its `traceparent`), when it came with one
  const attempt = await inTraceOf(job.trace, () =>
    attemptDelivery(p.attempt, { endpoint, messageId, payload, trigger: 'dispatcher', attemptsBefore: 0 }, answered),
  );
  const toWake = { endpointId: endpoint.id, workspaceId: endpoint.workspaceId, workspace: endpoint.workspace };
  if (attempt.result.outcome === 'gone') {
    try {
      await wakeEndpointRetries(p.starter, toWake, { dueAt: Date.now(), goneMessageId: messageId });
    } catch (err) {
      p.log.error(
        { err: (err as Error).message, endpointId: endpoint.id, messageId },
        'could not tell the endpoint retry workflow of a 410; the sweeper will',
      );
      void p.recorder.record({ ...attempt, status: null });
      return;
    }
  }
  if (attempt.status !== 'retrying') {
    void p.recorder.record(attempt);
    return;
  }
  if (await p.recorder.record(attempt)) p.waker.due(toWake, attempt.nextAttemptAt!.getTime());
}

export interface FirstAttemptJob {
  endpoint: SendingEndpoint;
  messageId: string;
  payload: string;
  /** The trace context of the event (CloudEvents' distributed-tracing extension), if it had one. */
  trace?: EventTrace;
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

const BATCH_MAX = 200;
const MAX_WRITING = 1;

type Waiting = { resolve: () => void; reject: (e: Error) => void };

export class AttemptRecorder {
  private buffer: RecordedAttempt[] = [];
  private waiting: Waiting[] = [];
  private writing = 0;
  private scheduled = false;
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    /** Called once the attempt is recorded, or its recording failed. */
    private readonly settled: (a: RecordedAttempt) => void,
  ) {}

  /** Records the attempt with the next batch; answers whether it was recorded (a failure is logged: the delivery stays pending for the sweeper). */
  record(a: RecordedAttempt): Promise<boolean> {
    this.buffer.push(a);
    const p = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject })).finally(() =>
      this.settled(a),
    );
    this.schedule();
    return p.then(
      () => true,
      (err: Error) => {
        this.log.error(
          { err: err.message },
          'recording attempts failed; their deliveries stay pending for the sweeper',
        );
        return false;
      },
    );
  }

  /** Resolves once everything recorded so far is written (or failed). */
  async flush(): Promise<void> {
    while (this.buffer.length > 0 || this.writing > 0 || this.scheduled)
      await new Promise<void>((r) => this.idle.push(r));
  }

  /** A statement starts after the attempts of this turn of the event loop are in, if one may start. */
  private schedule() {
    if (this.scheduled || this.writing >= MAX_WRITING) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.write();
    });
  }

  private async write() {
    const batch = this.buffer.splice(0, BATCH_MAX);
    const done = this.waiting.splice(0, batch.length);
    if (batch.length > 0) {
      this.writing++;
      try {
        await recordAttempts(this.pool, batch);
        for (const w of done) w.resolve();
      } catch (err) {
        for (const w of done) w.reject(err as Error);
      } finally {
        this.writing--;
      }
    }
    if (this.buffer.length > 0) this.schedule();
    else if (this.writing === 0 && !this.scheduled) for (const r of this.idle.splice(0)) r();
  }
}
