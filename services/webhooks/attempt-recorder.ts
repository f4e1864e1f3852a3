/**
 * Attempts recorded in batches, as a group commit: an attempt is written by the next statement that
 * starts, and a statement starts as soon as the previous one is done (one at a time: two could
 * update the same endpoints' rows in opposite orders; up to BATCH_MAX attempts each). A quiet dispatcher writes each attempt right away; a busy one
 * writes whatever came in while the previous statement ran. The time between an answer and its
 * record (what a killed dispatcher sends again) is one statement, not a timer.
 */
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { recordAttempts, type RecordedAttempt } from '../../domain/webhooks/deliveries.js';

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
