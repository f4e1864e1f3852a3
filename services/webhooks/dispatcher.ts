/**
 * The webhook dispatcher: consumer group `webhooks` of the events stream (domain/events/consumer.ts,
 * up to WEBHOOK_DISPATCH_PARALLEL reads of WEBHOOK_DISPATCH_BATCH entries in hand at once). For each read:
 *   1. the workspace of each event (CloudEvents extension `workspace` = slug, or `tenant`) and its
 *      enabled endpoints whose event types match (EndpointDirectory in domain/webhooks/endpoints.ts,
 *      cached briefly);
 *   2. one INSERT of the messages and their deliveries (message × endpoint, primary key: a re-read
 *      entry is recorded once, and only new deliveries go on): durable in PostgreSQL from here;
 *   3. the FIRST attempt of each new delivery straight away (domain/webhooks/attempt-delivery.ts),
 *      at most WEBHOOK_ENDPOINT_CONCURRENCY at a time per endpoint (first-attempts.ts), while
 *   4. the XACK of the whole read travels (a read whose XACK failed is read again and records
 *      nothing new, so nothing is sent twice);
 *   5. the attempts recorded in batches, each statement as soon as the previous one is done
 *      (first-attempts.ts); a failed first attempt is recorded with the due time of its first
 *      retry, and then its endpoint's retry workflow in Temporal
 *      (`webhook-endpoint-retries-<endpointId>`, one per failing endpoint) is told with a
 *      signal-with-start, a few failures of an endpoint per signal (RetryWaker,
 *      domain/webhooks/delivery-retries.ts). A 410 tells that workflow at once; it disables the endpoint.
 * A delivery left `pending` (this process died between 3 and 5: its lease lapsed; or its endpoint's
 * queue was full) is put on its endpoint's schedule by a sweeper once older than WEBHOOK_SWEEP_AFTER
 * (dispatcher-leases.ts: while this process lives, no other dispatcher sweeps what it holds), and an
 * endpoint whose workflow was never told (this process died between 5 and the signal) is told once
 * its delivery is that overdue (stale-delivery-sweeper.ts). Temporal is therefore off the happy
 * path: a delivered message costs two shared SQL statements and one POST.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { config as loadConfig, type Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { connectTemporal } from '../../lib/temporal.js';
import { runAsMain } from '../../lib/service-app.js';
import { watchStreamGroup } from '../../lib/metrics.js';
import { consumeStream, ensureGroup, type StreamEntry } from '../../domain/events/consumer.js';
import { traceOf } from '../../domain/events/events.js';
import { wakeEndpointRetries, webhookSender, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import { recordMessages, type NewMessage } from '../../domain/webhooks/deliveries.js';
import { EndpointDirectory, type SendingEndpoint } from '../../domain/webhooks/endpoints.js';
import { DispatcherLease } from '../../domain/webhooks/dispatcher-leases.js';
import { messageBody, messageIdOf } from '../../domain/webhooks/signing.js';
import { firstAttempts, type EndpointLanes } from './first-attempts.js';
import { StaleDeliverySweeper } from './stale-delivery-sweeper.js';

export const WEBHOOKS_GROUP = 'webhooks';
/** How long one read waits for new entries. */
const NEW_ENTRIES_BLOCK_MS = 1_000;

export interface Dispatcher {
  consumer: string;
  close(): Promise<void>;
}

export async function startDispatcher(
  cfg: Config = loadConfig(),
  opts: { consumer?: string; log?: Logger } = {},
): Promise<Dispatcher> {
  const log = opts.log ?? createLogger({ name: 'webhook-dispatcher', level: cfg.LOG_LEVEL });
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  const pool = createPool(cfg.DATABASE_URL, 6);
  const temporal = await connectTemporal(cfg);
  const sender = webhookSender(cfg);
  const starter: RetryStarter = { temporal, taskQueue: cfg.TEMPORAL_TASK_QUEUE, config: cfg };
  const consumer = opts.consumer ?? `${hostname()}-${process.pid}`;
  const stream = cfg.EVENTS_STREAM;
  const controller = new AbortController();
  const { signal } = controller;
  await ensureGroup(redis, stream, WEBHOOKS_GROUP);
  // the lease first: the deliveries this dispatcher records are its own while the lease runs
  const lease = new DispatcherLease(pool, consumer, cfg.WEBHOOK_SWEEP_AFTER, log);
  await lease.take();

  const { lanes, recorder, waker } = firstAttempts(cfg, pool, sender, starter, log);
  const directory = new EndpointDirectory(pool, cfg.SECRETS_KEY);
  const reading = consumeStream({
    redis,
    stream,
    group: WEBHOOKS_GROUP,
    consumer,
    claimIdleMs: cfg.EVENTS_CLAIM_IDLE_MS,
    signal,
    blockMs: NEW_ENTRIES_BLOCK_MS,
    count: cfg.WEBHOOK_DISPATCH_BATCH,
    parallel: cfg.WEBHOOK_DISPATCH_PARALLEL,
    beforeRound: (s) => lanes.waitForRoom(s),
    handleRead: (entries, ack) => dispatchRead({ pool, consumer, directory, lanes }, entries, ack),
    log,
  });
  const sweeper = new StaleDeliverySweeper({
    pool,
    waker: (e) => wakeEndpointRetries(starter, e, { dueAt: Date.now() }),
    sweepAfterMs: cfg.WEBHOOK_SWEEP_AFTER,
    consumer,
    held: lanes.held,
    signal,
    log,
  });

  // the delivery queue's depth in the metrics: the group's pending entries and lag (lib/metrics.ts)
  const unwatch = watchStreamGroup({ redis, stream, group: WEBHOOKS_GROUP });
  const running = Promise.all([reading, sweeper.run()]);
  log.info({ stream, group: WEBHOOKS_GROUP, consumer }, 'dispatching webhooks');

  return {
    consumer,
    async close() {
      controller.abort();
      unwatch();
      lanes.wake();
      await running;
      while (lanes.inFlight > 0) await sleep(20);
      await recorder.flush();
      await waker.flush();
      await lease.release();
      sender.close();
      await temporal.connection.close();
      await pool.end();
      redis.disconnect();
    },
  };
}

/** A read's webhook messages recorded with their deliveries, the new deliveries' first attempts queued, the read acknowledged. */
async function dispatchRead(
  d: { pool: Pool; consumer: string; directory: EndpointDirectory; lanes: EndpointLanes },
  entries: StreamEntry[],
  ack: (streamIds: string[]) => Promise<void>,
): Promise<void> {
  const messages = await messagesOf(d.directory, entries);
  const fresh = await recordMessages(d.pool, messages, d.consumer);
  // recorded: the first attempts start now, while the acknowledgement travels (a failed XACK
  // leaves the entries pending; read again, they record nothing new and are acknowledged then)
  const byId = new Map(messages.map((m) => [m.id, m]));
  for (const { messageId, endpointId } of fresh) {
    const m = byId.get(messageId)!;
    const endpoint = m.endpoints.find((e) => e.id === endpointId)!;
    d.lanes.enqueue({ endpoint, messageId, payload: m.payload, trace: m.trace });
  }
  await ack(entries.map((e) => e.streamId));
}

/** The webhook messages of a read: its events that some endpoint of their workspace wants. */
async function messagesOf(
  directory: EndpointDirectory,
  entries: StreamEntry[],
): Promise<(NewMessage & { endpoints: SendingEndpoint[] })[]> {
  const messages = [];
  for (const { event: ev } of entries) {
    const subscribers = await directory.subscribersOf(ev);
    if (!subscribers) continue;
    messages.push({
      id: messageIdOf(ev.source, ev.id),
      workspaceId: subscribers.workspaceId,
      eventType: ev.type,
      payload: messageBody(ev),
      endpointIds: subscribers.endpoints.map((e) => e.id),
      endpoints: subscribers.endpoints,
      trace: traceOf(ev),
    });
  }
  return messages;
}

await runAsMain(import.meta.url, 'webhook-dispatcher', () => startDispatcher());
