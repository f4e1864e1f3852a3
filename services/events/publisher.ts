/**
 * Appending events to the stream, idempotent per CloudEvent `source` + `id` (the CloudEvents
 * identity of an event): one Lua script checks the remembered id, appends and remembers the new
 * stream id atomically, so a retried publish gets the first stream id back and is not appended twice.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { CloudEvent } from '../../domain/events/events.js';
import { EVENT_FIELD } from '../../domain/events/consumer.js';
import { traceHeaders } from '../../lib/tracing.js';

/** KEYS: stream, dedupe key. ARGV: maxlen, ttl, id, type, envelope. Returns [streamId, duplicate]. */
const PUBLISH_SCRIPT = `
local seen = redis.call('GET', KEYS[2])
if seen then return {seen, 1} end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'id', ARGV[3], 'type', ARGV[4], '${EVENT_FIELD}', ARGV[5])
redis.call('SET', KEYS[2], id, 'EX', ARGV[2])
return {id, 0}
`;

export interface Published {
  streamId: string;
  /** The event was published before: `streamId` is the first publish's. */
  duplicate: boolean;
}

export interface StreamSettings {
  redis: Redis;
  stream: string;
  /** Approximate number of entries the stream keeps (XADD MAXLEN ~). */
  maxLen: number;
  /** How long a published event's identity is remembered for de-duplication (seconds). */
  dedupeTtlSeconds: number;
}

export class EventPublisher {
  constructor(private readonly s: StreamSettings) {}

  /**
   * Appends an event once per source + id. Published inside a trace, an event without a
   * `traceparent` of its own carries the trace's (CloudEvents' distributed-tracing extension), so
   * what it causes downstream (webhook attempts) joins that trace.
   */
  async append(published: CloudEvent): Promise<Published> {
    const { redis, stream, maxLen, dedupeTtlSeconds } = this.s;
    const event = withTraceContext(published);
    const [streamId, duplicate] = (await redis.eval(
      PUBLISH_SCRIPT,
      2,
      stream,
      this.dedupeKey(event),
      maxLen,
      dedupeTtlSeconds,
      event.id,
      event.type,
      JSON.stringify(event),
    )) as [string, number];
    return { streamId, duplicate: duplicate === 1 };
  }

  private dedupeKey(ev: CloudEvent) {
    return `${this.s.stream}:dedupe:${createHash('sha256').update(`${ev.source}\n${ev.id}`).digest('hex')}`;
  }
}

/** The event with the active trace's `traceparent` (and `tracestate`) when it has none and there is one. */
function withTraceContext(event: CloudEvent): CloudEvent {
  if (event.traceparent !== undefined) return event;
  const trace = traceHeaders();
  return trace.traceparent ? { ...event, ...trace } : event;
}
