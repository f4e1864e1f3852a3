/**
 * The controller's work queue, in the shape of client-go's rate-limited workqueue: keys (TenantClient
 * names) are queued once however often they are added, a key is worked on by one worker at a time
 * (added again meanwhile, it runs once more after), and a key whose work failed comes back after an
 * exponential delay of its own (base · 2^failures, capped), so one failing object never holds up
 * another and never spins.
 */
export interface WorkQueueOptions {
  /** Keys worked on at once. */
  concurrency: number;
  /** The first retry's delay after a failure; each further failure doubles it. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Keys added while being worked on: queued again when that work ends. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly opts: WorkQueueOptions,
  ) {}

  /** Queues the key now (a retry waiting for it is brought forward). */
  add(key: string): void {
    if (this.stopped) return;
    this.cancelDelayed(key);
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.drain();
  }

  /** Queues the key unless a retry already waits for it (a periodic resync leaves backoff alone). */
  refresh(key: string): void {
    if (!this.delayed.has(key)) this.add(key);
  }

  /** Keys waiting to be worked on (not counting the retries waiting for their delay). */
  depth(): number {
    return this.queue.length;
  }

  /** How often the key's work has failed in a row (0 once it succeeds). */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Drops what the queue knows of a key that is gone (no retry waits for it any more). */
  forget(key: string): void {
    this.cancelDelayed(key);
    this.failures.delete(key);
  }

  /** Resolves when nothing is queued or being worked on (retries waiting for their delay do not count). */
  idle(): Promise<void> {
    if (!this.queue.length && !this.processing.size) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops taking keys; resolves once the work under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    this.queue.length = 0;
    this.queued.clear();
    await this.idle();
  }

  private drain(): void {
    while (!this.stopped && this.processing.size < this.opts.concurrency && this.queue.length) {
      const key = this.queue.shift()!;
      this.queued.delete(key);
      this.processing.add(key);
      void this.run(key);
    }
    if (!this.queue.length && !this.processing.size) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async run(key: string): Promise<void> {
    try {
      await this.work(key);
      this.failures.delete(key);
    } catch {
      // the work reports its own failure (status, Event, log); the queue only brings the key back later
      const failures = this.failuresOf(key) + 1;
      this.failures.set(key, failures);
      this.addAfter(key, Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** (failures - 1)));
    } finally {
      this.processing.delete(key);
      if (this.dirty.delete(key)) this.add(key);
      this.drain();
    }
  }

  private addAfter(key: string, delayMs: number): void {
    if (this.stopped || this.delayed.has(key)) return;
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, timer);
  }

  private cancelDelayed(key: string): void {
    const timer = this.delayed.get(key);
    if (!timer) return;
    clearTimeout(timer);
    this.delayed.delete(key);
  }
}
