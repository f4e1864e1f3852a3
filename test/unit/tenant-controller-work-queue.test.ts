/**
 * The controller's work queue (services/tenant-controller/work-queue.ts): one failing key is retried
 * with a growing delay of its own while the other keys are worked on; a key is never worked on twice
 * at once, and one added meanwhile runs once more after.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../services/tenant-controller/work-queue.js';

describe('the controller work queue', () => {
  it('works on the other keys while one keeps failing, and retries that one with backoff', async () => {
    const runs: string[] = [];
    const queue = new WorkQueue(
      async (key) => {
        runs.push(key);
        if (key === 'poison') throw new Error('unsupported Unicode escape sequence');
      },
      { concurrency: 1, baseDelayMs: 40, maxDelayMs: 1_000 },
    );
    queue.add('poison');
    queue.add('acme');
    queue.add('globex');
    await queue.idle();
    expect(runs).toEqual(['poison', 'acme', 'globex']);
    // retried after 40 ms, then 80 ms, then 160 ms: three more runs in about 300 ms, not one per tick
    await sleep(330);
    await queue.idle();
    expect(runs.filter((k) => k === 'poison').length).toBeGreaterThanOrEqual(3);
    expect(runs.filter((k) => k === 'poison').length).toBeLessThanOrEqual(4);
    expect(queue.failuresOf('poison')).toBeGreaterThanOrEqual(2);
    expect(runs.filter((k) => k === 'acme')).toHaveLength(1);
    await queue.stop();
  });

  it('leaves a waiting retry alone on refresh, and brings it forward on add', async () => {
    let runs = 0;
    const queue = new WorkQueue(
      async () => {
        runs++;
        throw new Error('fails');
      },
      { concurrency: 1, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    );
    queue.add('a');
    await queue.idle();
    queue.refresh('a');
    await queue.idle();
    expect(runs).toBe(1);
    queue.add('a'); // e.g. the object was edited
    await queue.idle();
    expect(runs).toBe(2);
    await queue.stop();
  });

  it('never works on one key twice at once; added meanwhile, it runs once more after', async () => {
    let running = 0;
    let overlap = false;
    let runs = 0;
    const queue = new WorkQueue(
      async () => {
        overlap ||= running > 0;
        running++;
        runs++;
        await sleep(20);
        running--;
      },
      { concurrency: 4, baseDelayMs: 10, maxDelayMs: 10 },
    );
    queue.add('a');
    await sleep(5);
    queue.add('a');
    queue.add('a');
    await queue.idle();
    await sleep(30);
    await queue.idle();
    expect(overlap).toBe(false);
    expect(runs).toBe(2);
    await queue.stop();
  });
});
