/**
 * The dispatcher's reading of the events stream (consumer group `webhooks`). Each read (up to
 * WEBHOOK_DISPATCH_BATCH entries) is recorded in one INSERT of its messages and deliveries, its new
 * deliveries go to the lanes for their first attempt, and then the read is acknowledged. Up to
 * WEBHOOK_DISPATCH_PARALLEL reads are being recorded at once, so the next read does not wait for the
 * previous one's INSERT. Entries left unacknowledged by this consumer (a failed read) are read again
 * from its backlog; those of a consumer that died are claimed once idle long enough.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Pool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { isCloudEvent } from '../../domain/events/events.js';
import { ensureGroup, EVENT_FIELD } from '../../domain/events/consumer.js';
import type { SendingEndpoint } from '../../domain/webhooks/endpoints.js';
import { recordMessages, type NewMessage } from '../../domain/webhooks/deliveries.js';
import { messageBody, messageIdOf } from '../../domain/webhooks/signing.js';
import type { EndpointDirectory } from './endpoint-directory.js';
import type { EndpointLanes } from './endpoint-lanes.js';

export const WEBHOOKS_GROUP = 'webhooks';
const NEW_ENTRIES_BLOCK_MS = 1_000;
const CLAIM_EVERY_MAX_MS = 5_000;
const RETRY_READ_AFTER_MS = 500;

type RawEntry = [id: string, fields: string[] | null];
type Message = NewMessage & { endpoints: SendingEndpoint[] };

export interface StreamReaderDeps {
  /** For commands (XACK, XAUTOCLAIM, XGROUP). */
  redis: Redis;
  /** For the blocking reads (a connection of their own). */
  reader: Redis;
  pool: Pool;
  stream: string;
  consumer: string;
  directory: EndpointDirectory;
  lanes: EndpointLanes;
  limits: { WEBHOOK_DISPATCH_BATCH: number; WEBHOOK_DISPATCH_PARALLEL: number; EVENTS_CLAIM_IDLE_MS: number };
  signal: AbortSignal;
  log: Logger;
}

export class StreamReader {
  /** Reads being recorded. */
  private readonly handling = new Set<Promise<void>>();
  private failed: Error | undefined;
  /** Where this consumer's own unacknowledged entries are read from (undefined: all read). */
  private backlog: string | undefined = '0';
  private claimCursor = '0-0';
  private lastClaim = 0;

  constructor(private readonly deps: StreamReaderDeps) {}

  /** Reads until the signal aborts; then waits for the reads being recorded. */
  async run(): Promise<void> {
    const { signal } = this.deps;
    while (!signal.aborted) {
      try {
        await this.deps.lanes.waitForRoom(signal);
        if (this.backlog !== undefined) await this.readBacklog();
        else {
          await this.claimIdleEntries();
          await this.readNewEntries();
        }
      } catch (err) {
        // the reads still being recorded finish first; then this consumer's pending entries are read again
        await Promise.allSettled(this.handling);
        this.failed = undefined;
        if (signal.aborted) break;
        await this.recover(err as Error);
      }
    }
    await Promise.allSettled(this.handling);
  }

  private async readBacklog() {
    const { reader, consumer, stream, limits } = this.deps;
    const res = (await reader.xreadgroup(
      'GROUP',
      WEBHOOKS_GROUP,
      consumer,
      'COUNT',
      limits.WEBHOOK_DISPATCH_BATCH,
      'STREAMS',
      stream,
      this.backlog!,
    )) as [string, RawEntry[]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    await this.dispatch(entries);
    this.backlog = entries.length > 0 ? entries[entries.length - 1]![0] : undefined;
  }

  /** Entries another consumer read and never acknowledged (it died): claimed once idle long enough. */
  private async claimIdleEntries() {
    const { redis, consumer, stream, limits } = this.deps;
    if (Date.now() - this.lastClaim < Math.min(limits.EVENTS_CLAIM_IDLE_MS, CLAIM_EVERY_MAX_MS)) return;
    this.lastClaim = Date.now();
    const claimed = (await redis.xautoclaim(
      stream,
      WEBHOOKS_GROUP,
      consumer,
      limits.EVENTS_CLAIM_IDLE_MS,
      this.claimCursor,
      'COUNT',
      limits.WEBHOOK_DISPATCH_BATCH,
    )) as [string, RawEntry[]];
    this.claimCursor = claimed[0];
    await this.dispatch(claimed[1]);
  }

  /** New entries: the next read goes out while the previous reads are still being recorded. */
  private async readNewEntries() {
    const { reader, consumer, stream, limits, signal } = this.deps;
    while (this.handling.size >= limits.WEBHOOK_DISPATCH_PARALLEL && !signal.aborted) await Promise.race(this.handling);
    if (this.failed) throw this.failed;
    const res = (await reader.xreadgroup(
      'GROUP',
      WEBHOOKS_GROUP,
      consumer,
      'COUNT',
      limits.WEBHOOK_DISPATCH_BATCH,
      'BLOCK',
      NEW_ENTRIES_BLOCK_MS,
      'STREAMS',
      stream,
      '>',
    )) as [string, RawEntry[]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    if (entries.length === 0) return;
    const h: Promise<void> = this.dispatch(entries).then(
      () => void this.handling.delete(h),
      (err: Error) => {
        this.handling.delete(h);
        this.failed ??= err;
      },
    );
    this.handling.add(h);
  }

  private async recover(err: Error) {
    const { redis, stream, signal, log } = this.deps;
    if (err.message.startsWith('NOGROUP')) await ensureGroup(redis, stream, WEBHOOKS_GROUP);
    else log.error({ err: err.message }, 'dispatching a read failed; its entries stay pending and are read again');
    this.backlog = '0';
    await sleep(RETRY_READ_AFTER_MS, undefined, { signal }).catch(() => {});
  }

  /** Records a read's messages and deliveries, queues the new deliveries' first attempts, acknowledges the read. */
  private async dispatch(entries: RawEntry[]) {
    if (entries.length === 0) return;
    const messages = await this.messagesOf(entries);
    const fresh = await recordMessages(this.deps.pool, messages, this.deps.consumer);
    // recorded: the first attempts start now, while the acknowledgement travels (a failed XACK
    // leaves the entries pending; read again, they record nothing new and are acknowledged then)
    const byId = new Map(messages.map((m) => [m.id, m]));
    for (const d of fresh) {
      const m = byId.get(d.messageId)!;
      const endpoint = m.endpoints.find((e) => e.id === d.endpointId)!;
      this.deps.lanes.enqueue({ endpoint, messageId: m.id, eventType: m.eventType, payload: m.payload });
    }
    await this.deps.redis.xack(this.deps.stream, WEBHOOKS_GROUP, ...entries.map((e) => e[0]));
  }

  /** The webhook messages of a read: its CloudEvents that some endpoint of their workspace wants. */
  private async messagesOf(entries: RawEntry[]): Promise<Message[]> {
    const messages: Message[] = [];
    for (const [, fields] of entries) {
      if (!fields) continue;
      const ev = eventOf(fields);
      if (!isCloudEvent(ev)) continue;
      const subscribers = await this.deps.directory.subscribersOf(ev);
      if (!subscribers) continue;
      messages.push({
        id: messageIdOf(ev.source, ev.id),
        workspaceId: subscribers.workspaceId,
        eventType: ev.type,
        payload: messageBody(ev),
        endpointIds: subscribers.endpoints.map((e) => e.id),
        endpoints: subscribers.endpoints,
      });
    }
    return messages;
  }
}

/** The parsed envelope of a stream entry (undefined when it is not JSON). */
function eventOf(fields: string[]): unknown {
  try {
    const i = fields.indexOf(EVENT_FIELD);
    return JSON.parse(i >= 0 ? fields[i + 1]! : 'null');
  } catch {
    return undefined;
  }
}
