/**
 * Revoking workspace keys on every API replica at once, without a Redis call per request
 * (specification §5.2: "revocation is immediate, no grace period"; DESIGN §5).
 *
 * Every replica keeps a dedicated subscriber connection to Redis and:
 *
 * - receives each revocation on `apikey:revocations`, forgets the key's cached verification and
 *   acknowledges on the revoking replica's own channel;
 * - publishes a ping to its own channel every PING_MS and, each time one comes back, registers
 *   itself in `apikey:replicas` (a sorted set scored by Redis's clock). Redis delivers the messages of one subscriber
 *   connection in publish order, so a replica that has received its own ping published at time t
 *   has also received every revocation published before t.
 *
 * A replica trusts its cache only while it is *fresh*: its newest own ping received was published
 * less than STALE_MS ago (its own clock). Otherwise (Redis slow or gone, the event loop stalled, the
 * subscription reconnecting) the hot path checks the key's revocation marker in Redis on every
 * request, and fails closed if Redis cannot answer.
 *
 * Revoking (`announce`) publishes the revocation and returns when every registered replica has
 * acknowledged, usually within a millisecond or two, and at the latest after STALE_MS + a margin:
 * by then a replica that did not acknowledge is either no longer fresh or has received a ping
 * published after the revocation, so the very next request on any replica is refused. After a
 * reconnect the subscription may have missed revocations: the replica clears its cache when the
 * new subscription is confirmed (`onResubscribed`), and re-verification checks the marker.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';

const CHANNEL = 'apikey:revocations';
const REGISTRY = 'apikey:replicas';
const replicaChannel = (replicaId: string) => `apikey:replica:${replicaId}`;

export const PING_MS = 200;
export const STALE_MS = 1_000;
const ANNOUNCE_MARGIN_MS = 100;
/** A replica counts as live (worth waiting for) when it registered within this window. */
const REGISTRY_WINDOW_MS = 3_000;

// both scripts use Redis's clock, so replicas on machines with skewed clocks agree
const REGISTER_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
return now
`;
const LIVE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[1]), '+inf')
`;

type Message =
  | { type: 'revoked'; id: string; keyId: string; from: string }
  | { type: 'ping'; sentAt: number }
  | { type: 'ack'; id: string; replica: string };

export interface RevocationFeedOptions {
  /** Commands: publish, register. */
  redis: Redis;
  /** A connection of its own, used for nothing but this subscription. */
  subscriber: Redis;
  /** A key was revoked (by any replica): forget what this process cached about it. */
  onRevoked: (keyId: string) => void;
  /** The subscription was re-established and may have missed revocations: forget every cached key. */
  onResubscribed: () => void;
  onError: (err: unknown) => void;
}

export class RevocationFeed {
  readonly replicaId = randomUUID();
  /** performance.now() at which this replica published the newest own ping it has received. */
  private lastPing = -Infinity;
  private readonly waiting = new Map<string, { pending: Set<string>; done: () => void }>();
  private timer?: NodeJS.Timeout;
  private subscribedOnce = false;

  private readonly scripts: {
    register: (registry: string, replicaId: string) => Promise<number>;
    live: (registry: string, windowMs: number) => Promise<string[]>;
  };

  constructor(private readonly opts: RevocationFeedOptions) {
    // defined commands run by EVALSHA: the scripts travel to Redis once, not with every ping
    const redis = opts.redis as Redis & { registerReplica?: unknown; liveReplicas?: unknown };
    if (!redis.registerReplica) redis.defineCommand('registerReplica', { numberOfKeys: 1, lua: REGISTER_LUA });
    if (!redis.liveReplicas) redis.defineCommand('liveReplicas', { numberOfKeys: 1, lua: LIVE_LUA });
    const commands = redis as unknown as {
      registerReplica: RevocationFeed['scripts']['register'];
      liveReplicas: RevocationFeed['scripts']['live'];
    };
    this.scripts = { register: commands.registerReplica.bind(redis), live: commands.liveReplicas.bind(redis) };
  }

  async start(): Promise<void> {
    const { subscriber } = this.opts;
    subscriber.on('message', (_channel: string, raw: string) => this.onMessage(raw));
    // lost connection: stop trusting the cache at once; when it is back, subscribe again and clear
    subscriber.on('close', () => {
      this.lastPing = -Infinity;
    });
    subscriber.on('ready', () => {
      if (this.subscribedOnce) void this.subscribe().catch(this.opts.onError);
    });
    await this.subscribe();
    this.timer = setInterval(() => void this.ping().catch(this.opts.onError), PING_MS);
    this.timer.unref();
    await this.ping();
  }

  /** May the cache be trusted without asking Redis about revocation? */
  fresh(): boolean {
    return performance.now() - this.lastPing < STALE_MS;
  }

  /**
   * Tells every replica that a key is revoked and waits until all registered replicas acknowledged,
   * or until STALE_MS + a margin passed (see the module comment). Throws if it cannot publish.
   */
  async announce(keyId: string): Promise<void> {
    const id = randomUUID();
    const live = await this.scripts.live(REGISTRY, REGISTRY_WINDOW_MS);
    const started = performance.now();
    const acknowledged = new Promise<void>((resolve) =>
      this.waiting.set(id, { pending: new Set(live), done: resolve }),
    );
    try {
      const message: Message = { type: 'revoked', id, keyId, from: this.replicaId };
      await this.opts.redis.publish(CHANNEL, JSON.stringify(message));
      const left = STALE_MS + ANNOUNCE_MARGIN_MS - (performance.now() - started);
      const timeout = new AbortController();
      await Promise.race([
        acknowledged,
        sleep(Math.max(0, left), undefined, { signal: timeout.signal }).catch(() => {}),
      ]);
      timeout.abort();
    } finally {
      this.waiting.delete(id);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.opts.subscriber.disconnect();
    await this.opts.redis.zrem(REGISTRY, this.replicaId).catch(() => {});
  }

  private async subscribe() {
    await this.opts.subscriber.subscribe(CHANNEL, replicaChannel(this.replicaId));
    // revocations published while the subscription was down were missed: nothing cached before
    // this point may be trusted (re-verification checks the revocation marker)
    if (this.subscribedOnce) this.opts.onResubscribed();
    this.subscribedOnce = true;
  }

  private async ping() {
    const message: Message = { type: 'ping', sentAt: performance.now() };
    await this.opts.redis.publish(replicaChannel(this.replicaId), JSON.stringify(message));
  }

  private onMessage(raw: string) {
    let message: Message;
    try {
      message = JSON.parse(raw) as Message;
    } catch {
      return;
    }
    if (message.type === 'ping') {
      this.lastPing = Math.max(this.lastPing, message.sentAt);
      // registered only while its own pings come back: a replica that cannot hear revocations is
      // not waited for (and does not trust its cache either)
      void this.scripts.register(REGISTRY, this.replicaId).catch(this.opts.onError);
    } else if (message.type === 'revoked') {
      this.opts.onRevoked(message.keyId);
      const ack: Message = { type: 'ack', id: message.id, replica: this.replicaId };
      void this.opts.redis.publish(replicaChannel(message.from), JSON.stringify(ack)).catch(this.opts.onError);
    } else if (message.type === 'ack') {
      const wait = this.waiting.get(message.id);
      if (!wait) return;
      wait.pending.delete(message.replica);
      if (wait.pending.size === 0) wait.done();
    }
  }
}
