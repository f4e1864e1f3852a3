/**
 * The webhook dispatcher: consumer group `webhooks` of the events stream (domain/events/consumer.ts,
 * up to WEBHOOK_DISPATCH_PARALLEL reads of WEBHOOK_DISPATCH_BATCH entries in hand at once). For each read:
 *   1. the workspace of each event (CloudEvents extension `workspace` = slug, or `tenant`) and its
 *      enabled endpoints whose event types match (endpoint-directory.ts, cached briefly);
 *   2. one INSERT of the messages and their deliveries (message × endpoint, primary key: a re-read
 *      entry is recorded once, and only new deliveries go on): durable in PostgreSQL from here;
 *   3. the FIRST attempt of each new delivery straight away (domain/webhooks/attempt-delivery.ts),
 *      at most WEBHOOK_ENDPOINT_CONCURRENCY at a time per endpoint (endpoint-lanes.ts), while
 *   4. the XACK of the whole read travels (a read whose XACK failed is read again and records
 *      nothing new, so nothing is sent twice);
 *   5. the attempts recorded in batches, each statement as soon as the previous one is done
 *      (attempt-recorder.ts); a failed first attempt is recorded with the due time of its first
 *      retry, and then its endpoint's retry workflow in Temporal (`webhook-endpoint-retries-<endpointId>`,
 *      one per failing endpoint) is told with a signal-with-start, a few failures of an endpoint per
 *      signal (retry-waker.ts). A 410 tells that workflow at once, which disables the endpoint.
 * A delivery left `pending` (this process died between 3 and 5: its lease lapsed; or its endpoint's
 * queue was full) is put on its endpoint's schedule by a sweeper once older than WEBHOOK_SWEEP_AFTER
 * (dispatcher-lease.ts: while this process lives, no other dispatcher sweeps what it holds), and an
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
import { wakeEndpointRetries, webhookSender, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { WebhookSender } from '../../domain/webhooks/http-sender.js';
import { attemptDelivery, retrySettings, type AttemptDeps } from '../../domain/webhooks/attempt-delivery.js';
import { recordMessages, type NewMessage } from '../../domain/webhooks/deliveries.js';
import type { SendingEndpoint } from '../../domain/webhooks/endpoints.js';
import { messageBody, messageIdOf } from '../../domain/webhooks/signing.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { EndpointDirectory } from './endpoint-directory.js';
import { EndpointLanes, type FirstAttemptJob } from './endpoint-lanes.js';
import { DispatcherLease } from './dispatcher-lease.js';
import { RetryWaker } from './retry-waker.js';
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

/**
 * The first attempts' parts: the endpoint lanes, the recorder (a recorded attempt's delivery leaves
 * the lanes' held set) and the retry waker.
 */
function firstAttempts(cfg: Config, pool: Pool, sender: WebhookSender, starter: RetryStarter, log: Logger) {
  const waker = new RetryWaker(starter, log);
  const recorder = new AttemptRecorder(pool, log, (a) => lanes.release(a.endpointId, a.messageId));
  const parts: FirstAttemptParts = {
    attempt: { sender, userAgent: cfg.WEBHOOK_USER_AGENT, settings: retrySettings(cfg) },
    starter,
    waker,
    recorder,
    log,
  };
  const lanes: EndpointLanes = new EndpointLanes(cfg, (job, answered) => firstAttempt(parts, job, answered));
  return { lanes, recorder, waker };
}

interface FirstAttemptParts {
  attempt: AttemptDeps;
  starter: RetryStarter;
  waker: RetryWaker;
  recorder: AttemptRecorder;
  log: Logger;
}

/**
 * A delivery's first attempt. A failure is recorded with the due time of its first retry, and then
 * the endpoint's retry workflow is told (if this process dies in between, the sweeper tells it once
 * the delivery is overdue). A 410 Gone tells the workflow first, which disables the endpoint; if
 * that fails the delivery stays pending, and the sweeper puts it on the schedule.
 */
async function firstAttempt(p: FirstAttemptParts, job: FirstAttemptJob, answered: () => void): Promise<void> {
  const { endpoint, messageId, payload } = job;
  const attempt = await attemptDelivery(
    p.attempt,
    { endpoint, messageId, payload, trigger: 'dispatcher', attemptsBefore: 0 },
    answered,
  );
  const toWake = { endpointId: endpoint.id, workspaceId: endpoint.workspaceId, workspace: endpoint.workspace };
  if (attempt.result.outcome === 'gone') {
    try {
      await wakeEndpointRetries(p.starter, toWake, { dueAt: Date.now(), goneMessageId: messageId });
    } catch (err) {
      p.log.error(
        { err: (err as Error).message, endpointId: endpoint.id, messageId },
        'could not tell the endpoint retry workflow of a 410; the sweeper will',
      );
      void p.recorder.record({ ...attempt, status: null });
      return;
    }
  }
  if (attempt.status !== 'retrying') {
    void p.recorder.record(attempt);
    return;
  }
  if (await p.recorder.record(attempt)) p.waker.due(toWake, attempt.nextAttemptAt!.getTime());
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
    d.lanes.enqueue({ endpoint, messageId, eventType: m.eventType, payload: m.payload });
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
    });
  }
  return messages;
}

await runAsMain(import.meta.url, () => startDispatcher());
