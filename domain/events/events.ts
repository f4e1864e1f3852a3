/**
 * Events for the rest of the platform (specification §6, DESIGN §5): CloudEvents 1.0 envelopes
 * (structured JSON mode), published through the events service over HTTP and read from its Redis
 * stream with a consumer group.
 *
 * Delivery is at least once: a consumer acknowledges an entry only after its handler succeeded;
 * an entry whose consumer died (or whose handler failed) stays pending and is reclaimed with
 * XAUTOCLAIM once it has been idle for `claimIdleMs`. Handlers must therefore be idempotent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../../lib/logger.js';

/** A CloudEvents 1.0 envelope in structured JSON mode. */
export interface CloudEvent<T = unknown> {
  specversion: '1.0';
  /** Unique per `source`; a publish repeated with the same source and id is stored once. */
  id: string;
  /** URI-reference naming the producer, e.g. `/plana/tenant-lifecycle`. */
  source: string;
  /** Reverse-DNS-like event type, e.g. `client.provisioned`. */
  type: string;
  subject?: string;
  /** RFC 3339 timestamp. */
  time?: string;
  datacontenttype?: string;
  dataschema?: string;
  data?: T;
  data_base64?: string;
  /** Extension attributes (lower-case letters and digits, at most 20 characters). */
  [extension: string]: unknown;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const EXTENSION_NAME = /^[a-z0-9]{1,20}$/;
const CONTEXT_ATTRIBUTES = new Set([
  'specversion', 'id', 'source', 'type', 'subject', 'time', 'datacontenttype', 'dataschema', 'data', 'data_base64',
]);

/**
 * What is wrong with a value as a CloudEvents 1.0 JSON envelope: one message per problem, none
 * when it is a valid event. Not the `cloudevents` SDK's validation: it throws on the first problem
 * (ajv's wording), while the events service answers 400 with every problem of the envelope at
 * once; the rules here are the spec's, in 30 lines.
 */
export function cloudEventProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return ['the body must be a JSON object (a CloudEvents 1.0 envelope in structured mode)'];
  }
  const ev = value as Record<string, unknown>;
  const problems: string[] = [];
  const nonEmpty = (name: string, max: number, required: boolean) => {
    const v = ev[name];
    if (v === undefined) {
      if (required) problems.push(`${name} is required`);
    } else if (typeof v !== 'string' || v.length === 0) problems.push(`${name} must be a non-empty string`);
    else if (v.length > max) problems.push(`${name} must be at most ${max} characters`);
  };

  if (ev.specversion === undefined) problems.push('specversion is required');
  else if (ev.specversion !== '1.0') problems.push(`specversion must be "1.0" (got ${JSON.stringify(ev.specversion)})`);
  nonEmpty('id', 256, true);
  nonEmpty('source', 1024, true);
  nonEmpty('type', 256, true);
  nonEmpty('subject', 1024, false);
  nonEmpty('datacontenttype', 256, false);
  nonEmpty('dataschema', 1024, false);
  if (ev.time !== undefined) {
    if (typeof ev.time !== 'string' || !RFC3339.test(ev.time) || Number.isNaN(Date.parse(ev.time))) {
      problems.push('time must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z');
    }
  }
  if (ev.data !== undefined && ev.data_base64 !== undefined) problems.push('data and data_base64 must not both be present');
  if (ev.data_base64 !== undefined && (typeof ev.data_base64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(ev.data_base64))) {
    problems.push('data_base64 must be a base64 string');
  }
  for (const [name, v] of Object.entries(ev)) {
    if (CONTEXT_ATTRIBUTES.has(name)) continue;
    if (!EXTENSION_NAME.test(name)) {
      problems.push(`extension attribute "${name.slice(0, 40)}" must be named with 1-20 lower-case letters or digits`);
    } else if (!['string', 'number', 'boolean'].includes(typeof v)) {
      problems.push(`extension attribute ${name} must be a string, number or boolean`);
    }
  }
  return problems;
}

export function isCloudEvent(value: unknown): value is CloudEvent {
  return cloudEventProblems(value).length === 0;
}

/** A new envelope with `specversion`, `time` and a JSON `datacontenttype` filled in. */
export function cloudEvent<T>(fields: { id: string; source: string; type: string; subject?: string; data?: T }): CloudEvent<T> {
  return {
    specversion: '1.0',
    time: new Date().toISOString(),
    ...(fields.data !== undefined ? { datacontenttype: 'application/json' } : {}),
    ...fields,
  };
}

// ---------------------------------------------------------------------------------------------
// Publishing (over HTTP, through the events service)

export interface Published {
  /** The Redis stream entry id of the event (the first one, for a repeated publish). */
  streamId: string;
  /** True when an event with the same source and id had been published before. */
  duplicate: boolean;
}

/** The events service refused the event (4xx) or failed (5xx); `status` says which. */
export class EventsServiceError extends Error {
  override name = 'EventsServiceError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * POST /api/v1/events. An unreachable service throws a plain Error (worth retrying); an answer
 * other than 202 throws an EventsServiceError carrying the status and the service's detail.
 */
export async function publishEvent(
  opts: { eventsUrl: string; apiKey: string; timeoutMs?: number },
  event: CloudEvent,
): Promise<Published> {
  let res: Response;
  try {
    res = await fetch(new URL('/api/v1/events', opts.eventsUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json', 'x-api-key': opts.apiKey },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  } catch (err) {
    throw new Error(`events service unreachable at ${opts.eventsUrl}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as Partial<Published> & { detail?: string };
  if (res.status !== 202 || typeof body.streamId !== 'string') {
    throw new EventsServiceError(
      `events service answered ${res.status} to ${event.type} ${event.id}: ${body.detail ?? 'no detail'}`,
      res.status,
    );
  }
  return { streamId: body.streamId, duplicate: body.duplicate === true };
}

// ---------------------------------------------------------------------------------------------
// Consuming (from the Redis stream, in a consumer group)

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
      const res = (await this.reader.xreadgroup('GROUP', group, consumer, 'COUNT', this.count, 'STREAMS', stream, this.backlogCursor)) as [string, RawEntry[]][] | null;
      const entries = res?.[0]?.[1] ?? [];
      await this.handleEntries(entries);
      this.backlogCursor = entries.length > 0 ? entries[entries.length - 1]![0] : undefined;
      return;
    }
    const claimed = (await redis.xautoclaim(stream, group, consumer, this.opts.claimIdleMs, this.claimCursor, 'COUNT', this.count)) as [string, RawEntry[], string[]?];
    this.claimCursor = claimed[0];
    if (claimed[1].length > 0) {
      log?.info({ stream, group, consumer, entries: claimed[1].length }, 'reclaimed idle entries');
      await this.handleEntries(claimed[1]);
    }
    if (signal.aborted) return;
    const res = (await this.reader.xreadgroup(
      'GROUP', group, consumer, 'COUNT', this.count, 'BLOCK', this.blockMs, 'STREAMS', stream, '>',
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
