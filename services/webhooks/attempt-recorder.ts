/**
 * Attempts recorded in batches: one statement for up to BATCH_MAX attempts, or for what came in
 * within FLUSH_AFTER_MS.
 */
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { recordAttempts, type RecordedAttempt } from '../../domain/webhooks/deliveries.js';

const BATCH_MAX = 200;
const FLUSH_AFTER_MS = 20;

export class AttemptRecorder {
  private buffer: RecordedAttempt[] = [];
  private waiting: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

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
    if (this.buffer.length >= BATCH_MAX) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
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

  /** Records what is buffered now. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    const done = this.waiting;
    this.buffer = [];
    this.waiting = [];
    if (batch.length === 0) return;
    try {
      await recordAttempts(this.pool, batch);
      for (const w of done) w.resolve();
    } catch (err) {
      for (const w of done) w.reject(err as Error);
    }
  }
}
