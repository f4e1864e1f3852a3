/**
 * The consumer helper (domain/events/consumer.ts runConsumer) on the run's real Redis, fed through the real
 * events service: acknowledge after handling, retry after a failure, reclaim what a dead
 * consumer left pending, stop cleanly.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startEvents } from '../../services/events/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { cloudEvent, publishEvent, type CloudEvent } from '../../domain/events/events.js';
import { ensureGroup, runConsumer } from '../../domain/events/consumer.js';
import type { Config } from '../../lib/config.js';
import { testConfig } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';

let cfg: Config;
let events: Awaited<ReturnType<typeof startEvents>>;
let redis: Redis;

beforeAll(async () => {
  const port = await freePort();
  cfg = await testConfig({
    EVENTS_PORT: String(port),
    EVENTS_URL: `http://127.0.0.1:${port}`,
    EVENTS_STREAM: `events-consumer-${randomUUID().slice(0, 8)}`,
  });
  events = await startEvents(cfg);
  redis = new Redis(cfg.REDIS_URL);
});

afterAll(async () => {
  await events?.close();
  redis?.disconnect();
});

const publish = (type: string, data: unknown) =>
  publishEvent(
    { eventsUrl: cfg.EVENTS_URL, apiKey: testKeys.events },
    cloudEvent({ id: randomUUID(), source: '/plana/tests', type, data }),
  );

/** A new group that sees only events published from now on (the stream is shared by the tests). */
async function newGroup() {
  const group = `g-${randomUUID().slice(0, 6)}`;
  await ensureGroup(redis, cfg.EVENTS_STREAM, group, '$');
  return group;
}

const pendingCount = async (group: string) => ((await redis.xpending(cfg.EVENTS_STREAM, group)) as [number])[0];

/** Runs a consumer until the returned stop() is called; stop() resolves once runConsumer returned. */
function consume(group: string, consumer: string, handle: (ev: CloudEvent) => Promise<void>, claimIdleMs = 60_000) {
  const controller = new AbortController();
  const done = runConsumer({
    redis,
    stream: cfg.EVENTS_STREAM,
    group,
    consumer,
    handle,
    claimIdleMs,
    blockMs: 200,
    signal: controller.signal,
  });
  return async () => {
    controller.abort();
    await done;
  };
}

describe('runConsumer', () => {
  it('hands every event to the handler once and acknowledges it afterwards', async () => {
    const group = await newGroup();
    const seen: string[] = [];
    const stop = consume(group, 'c1', async (ev) => {
      seen.push((ev.data as { n: number }).n.toString());
    });
    try {
      for (let n = 1; n <= 5; n++) await publish('test.counted', { n });
      await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(5);
      expect(seen).toEqual(['1', '2', '3', '4', '5']);
      await expect.poll(() => pendingCount(group), { timeout: 10_000 }).toBe(0);
    } finally {
      await stop();
    }
  });

  it('leaves a failed event pending and handles it again later, acknowledging only the success', async () => {
    const group = await newGroup();
    const attempts: string[] = [];
    const stop = consume(
      group,
      'c1',
      async (ev) => {
        attempts.push(ev.id);
        if (attempts.length === 1) throw new Error('the account API is down');
      },
      300,
    );
    try {
      const published = await publish('test.flaky', { n: 1 });
      await expect.poll(() => attempts.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      await expect.poll(() => attempts.length, { timeout: 10_000 }).toBe(2);
      expect(attempts[0]).toBe(attempts[1]);
      await expect.poll(() => pendingCount(group), { timeout: 10_000 }).toBe(0);
      const [entry] = await redis.xrange(cfg.EVENTS_STREAM, published.streamId, published.streamId);
      expect(entry?.[1]).toContain('test.flaky');
    } finally {
      await stop();
    }
  });

  it('reclaims an entry that a consumer read and never acknowledged (it died) and handles it', async () => {
    const group = await newGroup();
    const published = await publish('test.orphaned', { n: 7 });
    // the consumer "dead-1" reads the entry and dies before acknowledging it
    const read = (await redis.xreadgroup('GROUP', group, 'dead-1', 'COUNT', 10, 'STREAMS', cfg.EVENTS_STREAM, '>')) as [
      string,
      [string, string[]][],
    ][];
    expect(read[0]![1].map(([id]) => id)).toEqual([published.streamId]);
    expect(await pendingCount(group)).toBe(1);

    const handled: CloudEvent[] = [];
    const stop = consume(group, 'alive-1', async (ev) => void handled.push(ev), 300);
    try {
      await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(1);
      expect(handled[0]!.type).toBe('test.orphaned');
      expect(handled[0]!.data).toEqual({ n: 7 });
      await expect.poll(() => pendingCount(group), { timeout: 10_000 }).toBe(0);
    } finally {
      await stop();
    }
  });

  it('continues with what it read itself before a restart under the same name', async () => {
    const group = await newGroup();
    // more than one page (the consumer reads 10 at a time) read before the "restart", none acknowledged
    for (let n = 1; n <= 25; n++) await publish('test.restarted', { n });
    await redis.xreadgroup('GROUP', group, 'worker-a', 'COUNT', 100, 'STREAMS', cfg.EVENTS_STREAM, '>');
    expect(await pendingCount(group)).toBe(25);

    const handled: CloudEvent[] = [];
    // a long claim time: only the consumer's own backlog can deliver them
    const stop = consume(group, 'worker-a', async (ev) => void handled.push(ev), 600_000);
    try {
      await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(25);
      expect(handled.map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      await expect.poll(() => pendingCount(group), { timeout: 10_000 }).toBe(0);
    } finally {
      await stop();
    }
  });

  it('stops when its signal aborts, leaving later events for the next consumer', async () => {
    const group = await newGroup();
    const handled: CloudEvent[] = [];
    const stop = consume(group, 'c1', async (ev) => void handled.push(ev));
    await publish('test.before-stop', {});
    await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(1);
    await stop();

    await publish('test.after-stop', {});
    const next: CloudEvent[] = [];
    const stopNext = consume(group, 'c2', async (ev) => void next.push(ev));
    try {
      await expect.poll(() => next.map((e) => e.type), { timeout: 10_000 }).toEqual(['test.after-stop']);
      expect(handled.map((e) => e.type)).toEqual(['test.before-stop']);
    } finally {
      await stopNext();
    }
  });

  it('acknowledges an entry that is not a CloudEvent without handing it to the handler', async () => {
    const group = await newGroup();
    await redis.xadd(cfg.EVENTS_STREAM, '*', 'event', 'not json');
    await publish('test.valid', {});
    const handled: CloudEvent[] = [];
    const stop = consume(group, 'c1', async (ev) => void handled.push(ev));
    try {
      await expect.poll(() => handled.map((e) => e.type), { timeout: 10_000 }).toEqual(['test.valid']);
      await expect.poll(() => pendingCount(group), { timeout: 10_000 }).toBe(0);
    } finally {
      await stop();
    }
  });
});
