/**
 * The webhook dispatcher (issue 9): consumer group `webhooks` of the events stream. For each read
 * (up to WEBHOOK_DISPATCH_BATCH entries; up to WEBHOOK_DISPATCH_PARALLEL reads being recorded at
 * once, so the next read does not wait for the previous one's INSERT):
 *   1. the workspace of each event (CloudEvents extension `workspace` = slug, or `tenant`) and its
 *      enabled endpoints whose event types match (cached for a second);
 *   2. one INSERT of the messages and their deliveries (message × endpoint, primary key: a re-read
 *      entry is recorded once, and only new deliveries go on): durable in PostgreSQL from here;
 *   3. the FIRST attempt of each new delivery straight away over HTTP, at most
 *      WEBHOOK_ENDPOINT_CONCURRENCY at a time per endpoint (a slow endpoint queues its own work only),
 *      while 4. the XACK of the whole read travels (a read whose XACK failed is read again and
 *      records nothing new, so nothing is sent twice);
 *   5. the attempts recorded in batches; a failed first attempt is handed to its durable retry
 *      workflow in Temporal (`webhook:<endpointId>:<messageId>`) before it is recorded.
 * A delivery left `pending` (this process died between 3 and 5, or its endpoint's queue was full) is
 * handed to its retry workflow by the sweeper once older than WEBHOOK_SWEEP_AFTER. Temporal is
 * therefore off the happy path: a delivered message costs two shared SQL statements and one POST.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Client } from '@temporalio/client';
import { config as loadConfig, type Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { connectTemporal } from '../../lib/temporal.js';
import { ensureGroup, EVENT_FIELD, isCloudEvent, type CloudEvent } from '../../domain/events/events.js';
import { sendingEndpoints, type SendingEndpoint } from '../../domain/webhooks/endpoints.js';
import { recordAttempts, recordMessages, type NewMessage, type RecordedAttempt } from '../../domain/webhooks/deliveries.js';
import { messageBody, messageIdOf, webhookHeaders } from '../../domain/webhooks/signing.js';
import { startRetry, webhookSender, type RetryStarter } from '../../domain/webhooks/sending.js';
import { closeOnSignals } from '../../lib/shutdown.js';

export const WEBHOOKS_GROUP = 'webhooks';
const CACHE_MS = 1_000;
/** A failed attempt's hand-off to Temporal waits at most this long for queued first attempts to go first. */
const HANDOFF_YIELD_MS = 1_000;

type RawEntry = [id: string, fields: string[] | null];

interface Job {
  endpoint: SendingEndpoint;
  messageId: string;
  eventType: string;
  payload: string;
}

export interface Dispatcher {
  consumer: string;
  close(): Promise<void>;
}

export async function startDispatcher(cfg: Config = loadConfig(), opts: { consumer?: string; log?: Logger } = {}): Promise<Dispatcher> {
  const log = opts.log ?? createLogger({ name: 'webhook-dispatcher', level: cfg.LOG_LEVEL });
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  const reader = redis.duplicate();
  const pool: Pool = createPool(cfg.DATABASE_URL, 6);
  const temporal: Client = await connectTemporal(cfg);
  const sender = webhookSender(cfg);
  const starter: RetryStarter = { temporal, taskQueue: cfg.TEMPORAL_TASK_QUEUE, config: cfg };
  const consumer = opts.consumer ?? `${hostname()}-${process.pid}`;
  const stream = cfg.EVENTS_STREAM;
  const controller = new AbortController();
  const { signal } = controller;
  await ensureGroup(redis, stream, WEBHOOKS_GROUP);

  // ---- which workspace, which endpoints (cached briefly) ----
  const workspaces = new Map<string, { at: number; id: Promise<string | null> }>();
  function workspaceOf(ev: CloudEvent): Promise<string | null> {
    const slug = typeof ev.workspace === 'string' ? ev.workspace : undefined;
    const tenant = typeof ev.tenant === 'string' ? ev.tenant : undefined;
    if (!slug && !tenant) return Promise.resolve(null);
    const key = slug ? `w:${slug}` : `t:${tenant}`;
    const hit = workspaces.get(key);
    if (hit && Date.now() - hit.at < 60_000) return hit.id;
    const id = pool
      .query<{ id: string }>(slug ? 'SELECT id FROM workspaces WHERE slug = $1' : 'SELECT workspace_id AS id FROM tenants WHERE name = $1', [slug ?? tenant])
      .then((r) => r.rows[0]?.id ?? null);
    workspaces.set(key, { at: Date.now(), id });
    id.catch(() => workspaces.delete(key));
    return id;
  }
  const endpointCache = new Map<string, { at: number; list: Promise<SendingEndpoint[]> }>();
  function endpointsOf(workspaceId: string): Promise<SendingEndpoint[]> {
    const hit = endpointCache.get(workspaceId);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.list;
    const list = sendingEndpoints(pool, cfg.SECRETS_KEY, { workspaceId });
    endpointCache.set(workspaceId, { at: Date.now(), list });
    list.catch(() => endpointCache.delete(workspaceId));
    return list;
  }

  // ---- first attempts, per endpoint ----
  const lanes = new Map<string, { active: number; queue: Job[] }>();
  let inFlight = 0;
  /** First attempts waiting in the lanes (not yet in flight). */
  let queuedFirstAttempts = 0;
  /** Deliveries this process holds (queued, in flight, or attempted and not yet recorded): not for the sweeper. */
  const queued = new Set<string>();
  let idle: (() => void) | undefined;

  function enqueue(job: Job): boolean {
    let lane = lanes.get(job.endpoint.id);
    if (!lane) lanes.set(job.endpoint.id, (lane = { active: 0, queue: [] }));
    if (lane.queue.length >= cfg.WEBHOOK_ENDPOINT_QUEUE_MAX) return false; // left pending: the sweeper hands it to Temporal
    lane.queue.push(job);
    queuedFirstAttempts++;
    queued.add(`${job.endpoint.id}:${job.messageId}`);
    inFlight++;
    pump(job.endpoint.id);
    return true;
  }

  function pump(endpointId: string) {
    const lane = lanes.get(endpointId)!;
    while (lane.active < cfg.WEBHOOK_ENDPOINT_CONCURRENCY && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      lane.active++;
      if (--queuedFirstAttempts === 0) kickHandOffs();
      // the endpoint's slot is free once its answer is in; handing a failure to Temporal happens
      // outside the slot (a slow workflow start must not hold up the endpoint's next deliveries)
      void attempt(job, () => {
        lane.active--;
        if (lane.active === 0 && lane.queue.length === 0) lanes.delete(endpointId);
        else pump(endpointId);
      }).finally(() => {
        inFlight--;
        if (inFlight < cfg.WEBHOOK_MAX_IN_FLIGHT) idle?.();
      });
    }
  }

  // ---- hand-offs to Temporal: a few workflow starts at a time, and while first attempts wait in
  // the lanes only those waiting for HANDOFF_YIELD_MS already (a start costs the dispatcher about a
  // millisecond of CPU; the first retry's delay counts from the failure, so waiting here does not
  // move the retry) ----
  let handingOff = 0;
  const handOffWaiting: { since: number; go: () => void }[] = [];
  let handOffTimer: NodeJS.Timeout | undefined;
  function kickHandOffs() {
    while (
      handOffWaiting.length > 0 &&
      handingOff < cfg.WEBHOOK_HANDOFF_CONCURRENCY &&
      (queuedFirstAttempts === 0 || Date.now() - handOffWaiting[0]!.since >= HANDOFF_YIELD_MS)
    ) {
      handingOff++;
      handOffWaiting.shift()!.go();
    }
    if (handOffWaiting.length > 0) {
      handOffTimer ??= setTimeout(() => {
        handOffTimer = undefined;
        kickHandOffs();
      }, 50);
    }
  }
  async function handOff<T>(start: () => Promise<T>): Promise<T> {
    await new Promise<void>((go) => {
      handOffWaiting.push({ since: Date.now(), go });
      kickHandOffs();
    });
    try {
      return await start();
    } finally {
      handingOff--;
      kickHandOffs();
    }
  }

  async function attempt(job: Job, answered: () => void) {
    const attemptedAt = new Date();
    const headers = webhookHeaders({ secrets: job.endpoint.secrets, msgId: job.messageId, body: job.payload, userAgent: cfg.WEBHOOK_USER_AGENT });
    let result;
    try {
      result = await sender.send(job.endpoint.url, headers, job.payload);
    } finally {
      answered();
    }
    if (result.outcome !== 'ok') {
      // durable before it is recorded: if this process dies now, the sweeper finds the delivery pending
      try {
        await handOff(() =>
          startRetry(starter, {
            endpointId: job.endpoint.id,
            messageId: job.messageId,
            workspaceId: job.endpoint.workspaceId,
            eventType: job.eventType,
            trigger: 'retry',
            firstAttempt: { outcome: result.outcome, statusCode: result.statusCode, retryAfterMs: result.retryAfterMs, error: result.error },
            failedAt: attemptedAt.getTime() + result.durationMs,
          }),
        );
      } catch (err) {
        log.error({ err: (err as Error).message, endpointId: job.endpoint.id, messageId: job.messageId }, 'could not start the retry workflow; the sweeper will');
        void record({ endpointId: job.endpoint.id, messageId: job.messageId, trigger: 'dispatcher', attemptedAt, result, status: null });
        return;
      }
    }
    // recorded with the next batch
    void record({
      endpointId: job.endpoint.id,
      messageId: job.messageId,
      trigger: 'dispatcher',
      attemptedAt,
      result,
      status: result.outcome === 'ok' ? 'delivered' : 'retrying',
    });
  }

  // ---- attempts recorded in batches ----
  let buffer: RecordedAttempt[] = [];
  let waiting: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  function record(a: RecordedAttempt): Promise<void> {
    buffer.push(a);
    const p = new Promise<void>((resolve, reject) => waiting.push({ resolve, reject })).finally(() => queued.delete(`${a.endpointId}:${a.messageId}`));
    if (buffer.length >= 200) void flush();
    else flushTimer ??= setTimeout(() => void flush(), 20);
    return p.catch((err: Error) => log.error({ err: err.message }, 'recording attempts failed; their deliveries stay pending for the sweeper'));
  }
  async function flush() {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    const batch = buffer;
    const done = waiting;
    buffer = [];
    waiting = [];
    if (batch.length === 0) return;
    try {
      await recordAttempts(pool, batch);
      for (const w of done) w.resolve();
    } catch (err) {
      for (const w of done) w.reject(err as Error);
    }
  }

  // ---- the stream ----
  async function handleEntries(entries: RawEntry[]) {
    if (entries.length === 0) return;
    const messages: (NewMessage & { endpoints: SendingEndpoint[] })[] = [];
    for (const [, fields] of entries) {
      if (!fields) continue;
      let ev: unknown;
      try {
        const i = fields.indexOf(EVENT_FIELD);
        ev = JSON.parse(i >= 0 ? fields[i + 1]! : 'null');
      } catch {
        ev = undefined;
      }
      if (!isCloudEvent(ev)) continue;
      const workspaceId = await workspaceOf(ev);
      if (!workspaceId) continue;
      const endpoints = (await endpointsOf(workspaceId)).filter((e) => e.enabled && (e.eventTypes === null || e.eventTypes.includes(ev.type)));
      if (endpoints.length === 0) continue;
      messages.push({
        id: messageIdOf(ev.source, ev.id),
        workspaceId,
        eventType: ev.type,
        payload: messageBody(ev),
        endpointIds: endpoints.map((e) => e.id),
        endpoints,
      });
    }
    const fresh = await recordMessages(pool, messages);
    // recorded: the first attempts start now, while the acknowledgement travels (a failed XACK
    // leaves the entries pending; read again, they record nothing new and are acknowledged then)
    const byId = new Map(messages.map((m) => [m.id, m]));
    for (const d of fresh) {
      const m = byId.get(d.messageId)!;
      const endpoint = m.endpoints.find((e) => e.id === d.endpointId)!;
      enqueue({ endpoint, messageId: m.id, eventType: m.eventType, payload: m.payload });
    }
    await redis.xack(stream, WEBHOOKS_GROUP, ...entries.map((e) => e[0]));
  }

  async function readLoop() {
    const handling = new Set<Promise<void>>();
    let failed: Error | undefined;
    let backlog: string | undefined = '0';
    let claimCursor = '0-0';
    let lastClaim = 0;
    while (!signal.aborted) {
      try {
        while (inFlight >= cfg.WEBHOOK_MAX_IN_FLIGHT && !signal.aborted) await new Promise<void>((r) => (idle = r));
        if (backlog !== undefined) {
          const res = (await reader.xreadgroup('GROUP', WEBHOOKS_GROUP, consumer, 'COUNT', cfg.WEBHOOK_DISPATCH_BATCH, 'STREAMS', stream, backlog)) as [string, RawEntry[]][] | null;
          const entries = res?.[0]?.[1] ?? [];
          await handleEntries(entries);
          backlog = entries.length > 0 ? entries[entries.length - 1]![0] : undefined;
          continue;
        }
        // entries another consumer read and never acknowledged (it died): claimed once idle long enough
        if (Date.now() - lastClaim >= Math.min(cfg.EVENTS_CLAIM_IDLE_MS, 5_000)) {
          lastClaim = Date.now();
          const claimed = (await redis.xautoclaim(stream, WEBHOOKS_GROUP, consumer, cfg.EVENTS_CLAIM_IDLE_MS, claimCursor, 'COUNT', cfg.WEBHOOK_DISPATCH_BATCH)) as [string, RawEntry[]];
          claimCursor = claimed[0];
          await handleEntries(claimed[1]);
        }
        // new entries: the next read goes out while the previous reads are still being recorded
        while (handling.size >= cfg.WEBHOOK_DISPATCH_PARALLEL && !signal.aborted) await Promise.race(handling);
        if (failed) throw failed;
        const res = (await reader.xreadgroup(
          'GROUP', WEBHOOKS_GROUP, consumer, 'COUNT', cfg.WEBHOOK_DISPATCH_BATCH, 'BLOCK', 1000, 'STREAMS', stream, '>',
        )) as [string, RawEntry[]][] | null;
        const entries = res?.[0]?.[1] ?? [];
        if (entries.length === 0) continue;
        const h: Promise<void> = handleEntries(entries).then(
          () => void handling.delete(h),
          (err: Error) => {
            handling.delete(h);
            failed ??= err;
          },
        );
        handling.add(h);
      } catch (err) {
        // the reads still being recorded finish first; then this consumer's pending entries are read again
        await Promise.allSettled(handling);
        failed = undefined;
        if (signal.aborted) break;
        const message = (err as Error).message;
        if (message.startsWith('NOGROUP')) await ensureGroup(redis, stream, WEBHOOKS_GROUP);
        else log.error({ err: message }, 'dispatching a read failed; its entries stay pending and are read again');
        backlog = '0';
        await sleep(500, undefined, { signal }).catch(() => {});
      }
    }
    await Promise.allSettled(handling);
  }

  // ---- the sweeper: deliveries still pending after WEBHOOK_SWEEP_AFTER go to their retry workflow ----
  async function sweep() {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ endpoint_id: string; message_id: string; workspace_id: string; event_type: string }>(
        `SELECT d.endpoint_id, d.message_id, d.workspace_id, m.event_type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
          WHERE d.status = 'pending' AND d.created_at < now() - ($1::bigint * interval '1 millisecond')
          ORDER BY d.created_at LIMIT 500 FOR UPDATE OF d SKIP LOCKED`,
        [cfg.WEBHOOK_SWEEP_AFTER],
      );
      const swept = rows.filter((r) => !queued.has(`${r.endpoint_id}:${r.message_id}`));
      for (const r of swept) {
        await startRetry(starter, { endpointId: r.endpoint_id, messageId: r.message_id, workspaceId: r.workspace_id, eventType: r.event_type, trigger: 'retry' });
      }
      if (swept.length > 0) {
        await client.query(
          `UPDATE webhook_deliveries d SET status = 'retrying', updated_at = now() FROM unnest($1::uuid[], $2::text[]) AS u(e, m)
            WHERE d.endpoint_id = u.e AND d.message_id = u.m AND d.status = 'pending'`,
          [swept.map((r) => r.endpoint_id), swept.map((r) => r.message_id)],
        );
        log.info({ deliveries: swept.length }, 'pending deliveries handed to their retry workflows');
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      log.error({ err: (err as Error).message }, 'sweeping pending deliveries failed');
    } finally {
      client.release();
    }
  }
  async function sweepLoop() {
    const every = Math.max(250, Math.min(cfg.WEBHOOK_SWEEP_AFTER / 4, 30_000));
    while (!signal.aborted) {
      await sleep(every, undefined, { signal }).catch(() => {});
      if (!signal.aborted) await sweep();
    }
  }

  const running = Promise.all([readLoop(), sweepLoop()]);
  log.info({ stream, group: WEBHOOKS_GROUP, consumer }, 'dispatching webhooks');

  return {
    consumer,
    async close() {
      controller.abort();
      reader.disconnect();
      idle?.();
      await running;
      while (inFlight > 0) await sleep(20);
      await flush();
      sender.close();
      await temporal.connection.close();
      await pool.end();
      redis.disconnect();
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const d = await startDispatcher();
  closeOnSignals(() => d.close());
}
