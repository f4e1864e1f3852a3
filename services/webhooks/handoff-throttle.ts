/**
 * Hand-offs of failed first attempts to Temporal: a few workflow starts at a time
 * (WEBHOOK_HANDOFF_CONCURRENCY), and while first attempts wait in the lanes only those waiting for
 * HANDOFF_YIELD_MS already (a start costs the dispatcher about a millisecond of CPU; the first
 * retry's delay counts from the failure, so waiting here does not move the retry).
 */

/** A failed attempt's hand-off to Temporal waits at most this long for queued first attempts to go first. */
export const HANDOFF_YIELD_MS = 1_000;
const RECHECK_MS = 50;

export class HandOffThrottle {
  private handingOff = 0;
  private readonly waiting: { since: number; go: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly concurrency: number,
    /** How many first attempts wait in the lanes right now. */
    private readonly queuedFirstAttempts: () => number,
  ) {}

  /** Runs `start` when its turn comes. */
  async run<T>(start: () => Promise<T>): Promise<T> {
    await new Promise<void>((go) => {
      this.waiting.push({ since: Date.now(), go });
      this.kick();
    });
    try {
      return await start();
    } finally {
      this.handingOff--;
      this.kick();
    }
  }

  /** Lets waiting hand-offs go as far as the limits allow; looks again shortly while some wait. */
  kick(): void {
    while (
      this.waiting.length > 0 &&
      this.handingOff < this.concurrency &&
      (this.queuedFirstAttempts() === 0 || Date.now() - this.waiting[0]!.since >= HANDOFF_YIELD_MS)
    ) {
      this.handingOff++;
      this.waiting.shift()!.go();
    }
    if (this.waiting.length > 0) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, RECHECK_MS);
    }
  }
}
