/**
 * Consuming the events stream (Redis, in a consumer group), the one loop every consumer runs: the
 * events service's consumers (one event at a time: runConsumer) and the webhook dispatcher (a whole
 * read at a time, several reads in hand at once: consumeStream).
 *
 * Each round: this consumer's own unacknowledged entries first (a restart under the same name, or
 * a read whose handling failed), page by page; then entries idle longer than `claimIdleMs` in any
 * consumer's hands (it died, or its handler failed) are claimed; then new entries are read with a
 * bounded block, on a connection of their own. An entry that is not a CloudEvent is logged and
 * acknowledged (it can never succeed); the handler acknowledges the rest.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../../lib/logger.js';
import { isCloudEvent, type CloudEvent } from './events.js';

/** Field of a stream entry that holds the JSON envelope (the service also stores `id` and `type`). */
export const EVENT_FIELD = 'event';
/** Idle entries are claimed at most this often (and at least every `claimIdleMs`). */
const CLAIM_EVERY_MAX_MS = 5_000;
/** After a failed round, the next one starts after this. */
const RETRY_ROUND_AFTER_MS = 500;

export interface StreamEntry {
  streamId: string;
  event: CloudEvent;
}

interface StreamOptions {
  redis: Redis;
  stream: string;
  group: string;
  /** This consumer's name within the group; stable across restarts of the same process slot. */
  consumer: string;
  /** Entries read by some consumer but not acknowledged for this long are reclaimed (XAUTOCLAIM). */
  claimIdleMs: number;
  /** Aborting stops the loop after the reads in hand; the returned promise then resolves. */
  signal: AbortSignal;
  /** How long one XREADGROUP waits for new entries (default 2 s). */
  blockMs?: number;
  /** Entries per read or claim (default 10). */
  count?: number;
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export interface ReadConsumerOptions extends StreamOptions {
  /**
   * Handles the CloudEvents of one read and acknowledges what it is done with (`ack`). Throwing
   * leaves what it did not acknowledge pending: this consumer reads its own pending entries again.
   */
  handleRead(entries: StreamEntry[], ack: (streamIds: string[]) => Promise<void>): Promise<void>;
  /** Reads being handled at once (default 1): the next read does not wait for the previous ones' handling. */
  parallel?: number;
  /** Awaited before each round (the dispatcher waits there while it holds too many deliveries). */
  beforeRound?: (signal: AbortSignal) => Promise<void>;
}

export interface ConsumerOptions extends StreamOptions {
  /** Handles one event; throwing leaves it pending, to be retried after `claimIdleMs`. */
  handle(event: CloudEvent, entry: { streamId: string }): Promise<void>;
}

type RawEntry = [id: string, fields: string[] | null];

function fieldValue(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** Creates the group if it does not exist (with the stream); a new group starts at the oldest entry kept. */
export async function ensureGroup(redis: Redis, stream: string, group: string, startId = '0'): Promise<boolean> {
  try {
    await redis.xgroup('CREATE', stream, group, startId, 'MKSTREAM');
    return true;
  } catch (err) {
    if ((err as Error).message.startsWith('BUSYGROUP')) return false;
    throw err;
  }
}

/**
 * Reads the stream as `consumer` of `group` until `signal` aborts, one event at a time: each is
 * acknowledged once `handle` resolved; a failed one stays pending and is claimed again once idle.
 */
export function runConsumer(opts: ConsumerOptions): Promise<void> {
  const { stream, group, signal, log } = opts;
  return consumeStream({
    ...opts,
    async handleRead(entries, ack) {
      for (const { streamId, event } of entries) {
        if (signal.aborted) return;
        try {
          await opts.handle(event, { streamId });
          await ack([streamId]);
        } catch (err) {
          log?.warn(
            { stream, group, streamId, eventId: event.id, type: event.type, err: (err as Error).message },
            `event not handled; it stays pending and is retried after ${opts.claimIdleMs} ms`,
          );
        }
      }
    },
  });
}

/** Reads the stream as `consumer` of `group` until `signal` aborts, handing each read to `handleRead`. */
export async function consumeStream(opts: ReadConsumerOptions): Promise<void> {
  const { signal } = opts;
  // Blocking reads get their own connection: they would hold up every other command on a shared one.
  const reader = opts.redis.duplicate();
  const stopReader = () => reader.disconnect();
  signal.addEventListener('abort', stopReader, { once: true });
  const rounds = new ConsumerRounds(opts, reader);
  try {
    await rounds.run();
  } finally {
    signal.removeEventListener('abort', stopReader);
    reader.disconnect();
  }
}

/** The rounds of a consumer and the reads it is handling. */
class ConsumerRounds {
  private readonly count: number;
  private readonly blockMs: number;
  private readonly parallel: number;
  /** Reads being handled. */
  private readonly handling = new Set<Promise<void>>();
  private failed: Error | undefined;
  private claimCursor = '0-0';
  private lastClaim = 0;
  /** Where this consumer's own unacknowledged entries are read from (undefined: all read). */
  private backlogCursor: string | undefined = '0';

  constructor(
    private readonly opts: ReadConsumerOptions,
    private readonly reader: Redis,
  ) {
    this.count = opts.count ?? 10;
    this.blockMs = opts.blockMs ?? 2_000;
    this.parallel = opts.parallel ?? 1;
  }

  async run(): Promise<void> {
    const { signal } = this.opts;
    while (!signal.aborted) {
      try {
        await this.opts.beforeRound?.(signal);
        await this.roomForRead();
        if (signal.aborted) break;
        if (this.backlogCursor !== undefined) await this.readBacklog();
        else {
          await this.claimIdleEntries();
          if (!signal.aborted) await this.readNewEntries();
        }
      } catch (err) {
        // the reads still being handled finish first; then this consumer's pending entries are read again
        await Promise.allSettled(this.handling);
        this.failed = undefined;
        if (signal.aborted) break;
        await this.recover(err as Error);
      }
    }
    await Promise.allSettled(this.handling);
  }

  /** Waits until fewer than `parallel` reads are being handled; throws what a finished one failed with. */
  private async roomForRead() {
    while (this.handling.size >= this.parallel && !this.opts.signal.aborted) await Promise.race(this.handling);
    if (this.failed) throw this.failed;
  }

  private async readBacklog() {
    const { stream, group, consumer } = this.opts;
    const res = (await this.reader.xreadgroup(
      'GROUP',
      group,
      consumer,
      'COUNT',
      this.count,
      'STREAMS',
      stream,
      this.backlogCursor!,
    )) as [string, RawEntry[]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    await this.handleRead(entries);
    this.backlogCursor = entries.length > 0 ? entries[entries.length - 1]![0] : undefined;
  }

  /** Entries a consumer read and never acknowledged (it died, or its handler failed): claimed once idle long enough. */
  private async claimIdleEntries() {
    const { redis, stream, group, consumer, claimIdleMs, log } = this.opts;
    if (Date.now() - this.lastClaim < Math.min(claimIdleMs, CLAIM_EVERY_MAX_MS)) return;
    this.lastClaim = Date.now();
    const claimed = (await redis.xautoclaim(
      stream,
      group,
      consumer,
      claimIdleMs,
      this.claimCursor,
      'COUNT',
      this.count,
    )) as [string, RawEntry[], string[]?];
    this.claimCursor = claimed[0];
    if (claimed[1].length === 0) return;
    log?.info({ stream, group, consumer, entries: claimed[1].length }, 'reclaimed idle entries');
    await this.handleRead(claimed[1]);
  }

  /** New entries: handled while the next read goes out, up to `parallel` reads at once. */
  private async readNewEntries() {
    const { stream, group, consumer } = this.opts;
    const res = (await this.reader.xreadgroup(
      'GROUP',
      group,
      consumer,
      'COUNT',
      this.count,
      'BLOCK',
      this.blockMs,
      'STREAMS',
      stream,
      '>',
    )) as [string, RawEntry[]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    if (entries.length === 0) return;
    const h: Promise<void> = this.handleRead(entries).then(
      () => void this.handling.delete(h),
      (err: Error) => {
        this.handling.delete(h);
        this.failed ??= err;
      },
    );
    this.handling.add(h);
  }

  /** After a failed round: a lost group is created again; anything else is logged. Own pending entries are read again. */
  private async recover(err: Error): Promise<void> {
    const { redis, stream, group, signal, log } = this.opts;
    if (err.message.startsWith('NOGROUP')) await ensureGroup(redis, stream, group);
    else
      log?.error(
        { stream, group, err: err.message },
        'reading the event stream failed; its entries stay pending and are read again',
      );
    this.backlogCursor = '0';
    await sleep(RETRY_ROUND_AFTER_MS, undefined, { signal }).catch(() => {});
  }

  /** Hands a read's CloudEvents to the handler; an entry that is not one is acknowledged unhandled. */
  private async handleRead(raw: RawEntry[]) {
    const { redis, stream, group, log } = this.opts;
    const entries: StreamEntry[] = [];
    for (const [streamId, fields] of raw) {
      if (!fields) continue; // trimmed away while pending; XAUTOCLAIM already dropped it
      const event = parseEvent(fields);
      if (isCloudEvent(event)) entries.push({ streamId, event });
      else {
        log?.warn({ stream, group, streamId }, 'stream entry is not a CloudEvent; acknowledged without handling');
        await redis.xack(stream, group, streamId);
      }
    }
    if (entries.length === 0) return;
    await this.opts.handleRead(entries, async (ids) => {
      if (ids.length > 0) await redis.xack(stream, group, ...ids);
    });
  }
}

/** The parsed envelope of a stream entry (undefined when it is not JSON). */
function parseEvent(fields: string[]): unknown {
  try {
    return JSON.parse(fieldValue(fields, EVENT_FIELD) ?? 'null');
  } catch {
    return undefined;
  }
}
