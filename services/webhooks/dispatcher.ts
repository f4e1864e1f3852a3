/**
 * The webhook dispatcher: consumer group `webhooks` of the events stream. For each read:
 *   1. the workspace of each event (CloudEvents extension `workspace` = slug, or `tenant`) and its
 *      enabled endpoints whose event types match (endpoint-directory.ts, cached briefly);
 *   2. one INSERT of the messages and their deliveries (message × endpoint, primary key: a re-read
 *      entry is recorded once, and only new deliveries go on): durable in PostgreSQL from here
 *      (stream-reader.ts, up to WEBHOOK_DISPATCH_PARALLEL reads being recorded at once);
 *   3. the FIRST attempt of each new delivery straight away over HTTP, at most
 *      WEBHOOK_ENDPOINT_CONCURRENCY at a time per endpoint (endpoint-lanes.ts, first-attempt.ts),
 *      while 4. the XACK of the whole read travels (a read whose XACK failed is read again and
 *      records nothing new, so nothing is sent twice);
 *   5. the attempts recorded in batches, each statement as soon as the previous one is done (attempt-recorder.ts); a failed first attempt is recorded
 *      with the due time of its first retry, and then its endpoint's retry workflow in Temporal
 *      (`webhook-endpoint-retries-<endpointId>`, one per failing endpoint) is told with a
 *      signal-with-start, a few failures of an endpoint per signal (retry-waker.ts). A 410 goes to
 *      the delivery's own workflow (`webhook:<endpointId>:<messageId>`), a few at a time (handoff-throttle.ts).
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
import { ensureGroup } from '../../domain/events/consumer.js';
import { wakeEndpointRetries, webhookSender, type RetryStarter } from '../../domain/webhooks/delivery-retries.js';
import type { WebhookSender } from '../../domain/webhooks/http-sender.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { EndpointDirectory } from './endpoint-directory.js';
import { EndpointLanes } from './endpoint-lanes.js';
import { makeFirstAttempt, type FirstAttemptDeps } from './first-attempt.js';
import { DispatcherLease } from './dispatcher-lease.js';
import { HandOffThrottle } from './handoff-throttle.js';
import { RetryWaker } from './retry-waker.js';
import { StaleDeliverySweeper } from './stale-delivery-sweeper.js';
import { StreamReader, WEBHOOKS_GROUP } from './stream-reader.js';

export { WEBHOOKS_GROUP } from './stream-reader.js';

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
  const reader = redis.duplicate();
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
  const streamReader = new StreamReader({
    redis,
    reader,
    pool,
    stream,
    consumer,
    directory,
    lanes,
    limits: cfg,
    signal,
    log,
  });
  const sweeper = new StaleDeliverySweeper({
    pool,
    waker: (e) => wakeEndpointRetries(starter, e, Date.now()),
    sweepAfterMs: cfg.WEBHOOK_SWEEP_AFTER,
    consumer,
    held: lanes.held,
    signal,
    log,
  });

  // the delivery queue's depth in the metrics: the group's pending entries and lag (lib/metrics.ts)
  const unwatch = watchStreamGroup({ redis, stream, group: WEBHOOKS_GROUP });
  const running = Promise.all([streamReader.run(), sweeper.run()]);
  log.info({ stream, group: WEBHOOKS_GROUP, consumer }, 'dispatching webhooks');

  return {
    consumer,
    async close() {
      controller.abort();
      unwatch();
      reader.disconnect();
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
 * the lanes' held set), the retry waker and the hand-offs, which yield while first attempts queue.
 */
function firstAttempts(cfg: Config, pool: Pool, sender: WebhookSender, starter: RetryStarter, log: Logger) {
  const handOffs: HandOffThrottle = new HandOffThrottle(
    cfg.WEBHOOK_HANDOFF_CONCURRENCY,
    () => lanes.queuedFirstAttempts,
  );
  const waker = new RetryWaker(starter, log);
  const recorder = new AttemptRecorder(pool, log, (a) => lanes.release(a.endpointId, a.messageId));
  const attempt: FirstAttemptDeps = {
    sender,
    userAgent: cfg.WEBHOOK_USER_AGENT,
    starter,
    handOffs,
    waker,
    record: (a) => recorder.record(a),
    log,
  };
  const lanes: EndpointLanes = new EndpointLanes(
    cfg,
    (job, answered) => makeFirstAttempt(attempt, job, answered),
    () => handOffs.kick(),
  );
  return { lanes, recorder, waker };
}

await runAsMain(import.meta.url, () => startDispatcher());
