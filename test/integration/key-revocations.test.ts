/**
 * The revocation feed on the real Redis (the revocation feed in domain/access/api-keys.ts): an announced revocation has
 * reached every registered replica when `announce` returns, and a replica that lost its
 * subscription stops trusting its cache at once and clears it when the subscription is back.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { RevocationFeed } from '../../domain/access/api-keys.js';

const connections: Redis[] = [];
const feeds: RevocationFeed[] = [];

function connect() {
  const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 2 });
  connections.push(redis);
  return redis;
}

async function replica() {
  const revoked: string[] = [];
  const events = { revoked, resubscribed: 0 };
  const subscriber = connect();
  const feed = new RevocationFeed({
    redis: connect(),
    subscriber,
    onRevoked: (keyId) => revoked.push(keyId),
    onResubscribed: () => events.resubscribed++,
    onError: () => {},
  });
  feeds.push(feed);
  await feed.start();
  return { feed, subscriber, events };
}

afterAll(async () => {
  for (const feed of feeds) await feed.close();
  for (const redis of connections) redis.disconnect();
});

describe('the revocation feed', () => {
  it('has told every replica when announce returns, the announcing one included', async () => {
    const [a, b, c] = await Promise.all([replica(), replica(), replica()]);
    await vi.waitFor(() => expect([a, b, c].every((r) => r.feed.fresh())).toBe(true));
    const keyId = randomUUID();
    await a.feed.announce(keyId);
    for (const r of [a, b, c]) expect(r.events.revoked).toContain(keyId);
  });

  it('stops trusting the cache when the subscription is lost', async () => {
    const r = await replica();
    await vi.waitFor(() => expect(r.feed.fresh()).toBe(true));
    r.subscriber.disconnect(); // gone for good: no reconnect
    await vi.waitFor(() => expect(r.feed.fresh()).toBe(false));
  });

  it('clears the cache when a dropped subscription is back, and hears revocations again', async () => {
    const r = await replica();
    await vi.waitFor(() => expect(r.feed.fresh()).toBe(true));
    r.subscriber.disconnect(true); // drop the connection; ioredis reconnects and subscribes again
    await vi.waitFor(() => expect(r.events.resubscribed).toBe(1), { timeout: 10_000 });
    await vi.waitFor(() => expect(r.feed.fresh()).toBe(true), { timeout: 10_000 });
    const other = await replica();
    const keyId = randomUUID();
    await other.feed.announce(keyId);
    expect(r.events.revoked).toContain(keyId);
  });
});
