/**
 * Consuming the events stream (Redis, in a consumer group): the envelope's field in a stream entry,
 * a group's creation, and runConsumer, the loop the platform's consumers run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../../lib/logger.js';
import { isCloudEvent, type CloudEvent } from './events.js';

/** Field of a stream entry that holds the JSON envelope (the service also stores `id` and `type`). */
export const EVENT_FIELD = 'event';

export interface StreamEntry {
  streamId: string;
  event: CloudEvent;
}

export interface ConsumerOptions {
  redis: Redis;
  stream: string;
  group: string;
  /** This consumer's name within the group; stable across restarts of the same process slot. */
  consumer: string;
  /** Handles one event; throwing leaves it pending, to be retried after `claimIdleMs`. */
  handle(event: CloudEvent, entry: { streamId: string }): Promise<void>;
  /** Entries read by some consumer but not acknowledged for this long are reclaimed (XAUTOCLAIM). */
  claimIdleMs: number;
  /** Aborting stops the loop after the event in hand; runConsumer then resolves. */
  signal: AbortSignal;
  /** How long one XREADGROUP waits for new entries (default 2 s). */
  blockMs?: number;
  /** Entries per read or claim (default 10). */
  count?: number;
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
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
 * Reads the stream as `consumer` of `group` until `signal` aborts. Order of work in each round:
 * entries idle longer than `claimIdleMs` (a dead consumer's, or ours that failed) are claimed and
 * handled, then new entries are read with a bounded block. Every entry is acknowledged only after
 * `handle` resolved; an entry that is not a CloudEvent is logged and acknowledged (it can never
 * succeed). A consumer restarted under the same name first handles what it read before.
 */
export async function runConsumer(opts: ConsumerOptions): Promise<void> {
  const { signal } = opts;
  // Blocking reads get their own connection: they would hold up every other command on a shared one.
  const reader = opts.redis.duplicate();
  const stopReader = () => reader.disconnect();
  signal.addEventListener('abort', stopReader, { once: true });
  const rounds = new ConsumerRounds(opts, reader);
  try {
    while (!signal.aborted) {
      try {
        await rounds.next();
      } catch (err) {
        if (signal.aborted) break;
        await rounds.recover(err as Error);
      }
    }
  } finally {
    signal.removeEventListener('abort', stopReader);
    reader.disconnect();
  }
}

/** The rounds of a consumer: its own backlog first, then per round the idle entries claimed and the new ones read. */
class ConsumerRounds {
  private readonly count: number;
  private readonly blockMs: number;
  private claimCursor = '0-0';
  /** Entries this consumer name read before a restart and did not acknowledge: read first, page by page. */
  private backlogCursor: string | undefined = '0';

  constructor(
    private readonly opts: ConsumerOptions,
    private readonly reader: Redis,
  ) {
    this.count = opts.count ?? 10;
    this.blockMs = opts.blockMs ?? 2_000;
  }

  async next(): Promise<void> {
    const { redis, stream, group, consumer, signal, log } = this.opts;
    if (this.backlogCursor !== undefined) {
      const res = (await this.reader.xreadgroup(
        'GROUP',
        group,
        consumer,
        'COUNT',
        this.count,
        'STREAMS',
        stream,
        this.backlogCursor,
      )) as [string, RawEntry[]][] | null;
      const entries = res?.[0]?.[1] ?? [];
      await this.handleEntries(entries);
      this.backlogCursor = entries.length > 0 ? entries[entries.length - 1]![0] : undefined;
      return;
    }
    const claimed = (await redis.xautoclaim(
      stream,
      group,
      consumer,
      this.opts.claimIdleMs,
      this.claimCursor,
      'COUNT',
      this.count,
    )) as [string, RawEntry[], string[]?];
    this.claimCursor = claimed[0];
    if (claimed[1].length > 0) {
      log?.info({ stream, group, consumer, entries: claimed[1].length }, 'reclaimed idle entries');
      await this.handleEntries(claimed[1]);
    }
    if (signal.aborted) return;
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
    await this.handleEntries(res?.[0]?.[1] ?? []);
  }

  /** After a failed round: a lost group is created again at once; anything else is logged and retried after a second. */
  async recover(err: Error): Promise<void> {
    const { redis, stream, group, signal, log } = this.opts;
    if (err.message.startsWith('NOGROUP')) {
      await ensureGroup(redis, stream, group);
      return;
    }
    log?.error({ stream, group, err: err.message }, 'reading the event stream failed; trying again');
    await sleep(1_000, undefined, { signal }).catch(() => {});
  }

  private async handleEntries(entries: RawEntry[]) {
    for (const [streamId, fields] of entries) {
      if (this.opts.signal.aborted) return;
      if (!fields) continue; // trimmed away while pending; XAUTOCLAIM already dropped it
      await this.handleEntry(streamId, fields);
    }
  }

  /** Handles and acknowledges one entry; an entry that is not a CloudEvent is acknowledged unhandled (it can never succeed). */
  private async handleEntry(streamId: string, fields: string[]) {
    const { redis, stream, group, log } = this.opts;
    let event: unknown;
    try {
      event = JSON.parse(fieldValue(fields, EVENT_FIELD) ?? 'null');
    } catch {
      event = undefined;
    }
    if (!isCloudEvent(event)) {
      log?.warn({ stream, group, streamId }, 'stream entry is not a CloudEvent; acknowledged without handling');
      await redis.xack(stream, group, streamId);
      return;
    }
    try {
      await this.opts.handle(event, { streamId });
      await redis.xack(stream, group, streamId);
    } catch (err) {
      log?.warn(
        { stream, group, streamId, eventId: event.id, type: event.type, err: (err as Error).message },
        `event not handled; it stays pending and is retried after ${this.opts.claimIdleMs} ms`,
      );
    }
  }
}
