/**
 * Messages, deliveries (message × endpoint) and attempts in PostgreSQL, written in batches: the
 * dispatcher records a whole stream read in one statement and the attempts of many deliveries
 * in another, so a delivery costs a fraction of a round trip. Then the deliveries waiting on their
 * endpoint's retry schedule (webhook_deliveries.next_attempt_at, status 'retrying'): the ones due
 * now, when the next one is due, failing them all when the endpoint is gone, and what the
 * dispatcher's sweeper hands to the endpoints' retry workflows (deliveries left pending,
 * deliveries overdue because their workflow was never told).
 */
import type { Pool, PoolClient } from 'pg';
import type { EventTrace } from '../events/events.js';
import type { AttemptResult } from './http-sender.js';
import { webhookAttempts } from '../../lib/metrics.js';

export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'failed';
export type Trigger = 'dispatcher' | 'retry' | 'replay' | 'test';

/** The event type of a test send (its message is sent straight away and never recorded as a message). */
export const TEST_EVENT_TYPE = 'webhook.test';

export interface NewMessage {
  id: string;
  workspaceId: string;
  eventType: string;
  payload: string;
  endpointIds: string[];
  /** The event's trace context (CloudEvents' distributed-tracing extension), when it came with one. */
  trace?: EventTrace;
}

/**
 * Records messages and their deliveries (idempotent: a message or delivery recorded before is
 * left as it is) and answers the deliveries that are new, i.e. whose first attempt is still to be
 * made by `dispatcher` (it holds them while its lease runs: dispatcher-leases.ts).
 */
export async function recordMessages(
  pool: Pool,
  messages: NewMessage[],
  dispatcher: string,
): Promise<{ endpointId: string; messageId: string }[]> {
  if (messages.length === 0) return [];
  const pairs = messages.flatMap((m) => m.endpointIds.map((e) => [e, m.id, m.workspaceId] as const));
  const { rows } = await pool.query<{ endpoint_id: string; message_id: string }>(
    `WITH m AS (
       INSERT INTO webhook_messages (id, workspace_id, event_type, payload, traceparent, tracestate)
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $9::text[], $10::text[])
       ON CONFLICT (id) DO NOTHING
     )
     INSERT INTO webhook_deliveries (endpoint_id, message_id, workspace_id, dispatcher)
     SELECT e, m, w, $8 FROM unnest($5::uuid[], $6::text[], $7::uuid[]) AS u(e, m, w)
     ON CONFLICT (endpoint_id, message_id) DO NOTHING
     RETURNING endpoint_id, message_id`,
    [
      messages.map((m) => m.id),
      messages.map((m) => m.workspaceId),
      messages.map((m) => m.eventType),
      messages.map((m) => m.payload),
      pairs.map((p) => p[0]),
      pairs.map((p) => p[1]),
      pairs.map((p) => p[2]),
      dispatcher,
      messages.map((m) => m.trace?.traceparent ?? null),
      messages.map((m) => m.trace?.tracestate ?? null),
    ],
  );
  return rows.map((r) => ({ endpointId: r.endpoint_id, messageId: r.message_id }));
}

export interface RecordedAttempt {
  endpointId: string;
  messageId: string;
  trigger: Trigger;
  attemptedAt: Date;
  result: AttemptResult;
  /** The delivery's status after this attempt (null: unchanged). */
  status: DeliveryStatus | null;
  /** With status 'retrying': when its endpoint's retry workflow makes the next attempt (absent: no such schedule). */
  nextAttemptAt?: Date;
}

/**
 * Writes attempts, moves their deliveries on, and keeps each endpoint's failure clock
 * (`failing_since`: set by a failure after a success, cleared by a success; written only when it changes).
 */
export async function recordAttempts(db: Pool | PoolClient, attempts: RecordedAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const col = <T>(f: (a: RecordedAttempt) => T) => attempts.map(f);
  await db.query(
    `WITH a AS (
       INSERT INTO webhook_attempts (endpoint_id, message_id, attempted_at, trigger, status_code, duration_ms, outcome, error, response_headers, response_excerpt)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[], $9::jsonb[], $10::text[])
     ), d AS (
       -- 'retrying' (the dispatcher handed it to its workflow) only moves a pending delivery: the
       -- workflow may have finished it already
       UPDATE webhook_deliveries d SET attempts = d.attempts + 1,
         status = CASE WHEN u.status = 'retrying' AND d.status <> 'pending' THEN d.status ELSE COALESCE(u.status, d.status) END,
         -- the endpoint's retry schedule: set for a failure that waits on it (a pending delivery's first
         -- failure, or a due one failing again), cleared once delivered or failed
         next_attempt_at = CASE WHEN u.next_at IS NOT NULL AND (d.status = 'pending' OR d.next_attempt_at IS NOT NULL) THEN u.next_at
                                WHEN u.status IN ('delivered', 'failed') THEN NULL ELSE d.next_attempt_at END,
         last_error = u.error, updated_at = now(),
         delivered_at = CASE WHEN u.status = 'delivered' THEN u.at ELSE d.delivered_at END
       FROM unnest($1::uuid[], $2::text[], $11::text[], $8::text[], $3::timestamptz[], $12::timestamptz[]) AS u(endpoint_id, message_id, status, error, at, next_at)
       WHERE d.endpoint_id = u.endpoint_id AND d.message_id = u.message_id
     )
     UPDATE webhook_endpoints e SET failing_since = CASE WHEN u.ok THEN NULL ELSE now() END
     FROM (SELECT endpoint_id, bool_or(outcome = 'ok') AS ok FROM unnest($1::uuid[], $7::text[]) AS x(endpoint_id, outcome) GROUP BY endpoint_id) u
     WHERE e.id = u.endpoint_id AND ((u.ok AND e.failing_since IS NOT NULL) OR (NOT u.ok AND e.failing_since IS NULL))`,
    [
      col((a) => a.endpointId),
      col((a) => a.messageId),
      col((a) => a.attemptedAt.toISOString()),
      col((a) => a.trigger),
      col((a) => a.result.statusCode),
      col((a) => a.result.durationMs),
      col((a) => a.result.outcome),
      col((a) => a.result.error),
      col((a) => JSON.stringify(a.result.headers)),
      col((a) => a.result.excerpt.replace(/\0/g, '')),
      col((a) => a.status),
      col((a) => a.nextAttemptAt?.toISOString() ?? null),
    ],
  );
  for (const a of attempts) webhookAttempts.inc({ outcome: a.result.outcome, trigger: a.trigger });
}

export async function setDeliveryStatus(
  db: Pool | PoolClient,
  endpointId: string,
  messageId: string,
  status: DeliveryStatus,
  error?: string,
) {
  await db.query(
    `UPDATE webhook_deliveries SET status = $3, last_error = COALESCE($4, last_error), updated_at = now() WHERE endpoint_id = $1 AND message_id = $2`,
    [endpointId, messageId, status, error ?? null],
  );
}

export async function messagePayload(
  db: Pool,
  messageId: string,
): Promise<{ payload: string; eventType: string; workspaceId: string } | undefined> {
  const { rows } = await db.query<{ payload: string; event_type: string; workspace_id: string }>(
    'SELECT payload, event_type, workspace_id FROM webhook_messages WHERE id = $1',
    [messageId],
  );
  return rows[0] && { payload: rows[0].payload, eventType: rows[0].event_type, workspaceId: rows[0].workspace_id };
}

/** Disables an endpoint (it answered 410 Gone); true when this call disabled it. */
export async function disableEndpoint(db: Pool, endpointId: string, reason: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1 AND enabled`,
    [endpointId, reason],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Disables an endpoint whose failure clock (`failing_since`) is older than `failingForMs`; answers
 * since when it had been failing when this call disabled it, undefined otherwise.
 */
export async function disableEndpointFailingFor(
  db: Pool,
  endpointId: string,
  failingForMs: number,
  reason: string,
): Promise<{ failingSince: Date } | undefined> {
  const { rows } = await db.query<{ failing_since: Date }>(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
      WHERE id = $1 AND enabled AND failing_since < now() - ($3::bigint * interval '1 millisecond')
      RETURNING failing_since`,
    [endpointId, reason, failingForMs],
  );
  return rows[0] && { failingSince: rows[0].failing_since };
}

export async function workspaceAdminEmails(db: Pool, workspaceId: string): Promise<string[]> {
  const { rows } = await db.query<{ email: string }>(
    `SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND m.role = 'admin' ORDER BY u.email`,
    [workspaceId],
  );
  return rows.map((r) => r.email);
}

export interface AttemptView {
  id: string;
  messageId: string;
  /** The message's event type (TEST_EVENT_TYPE for a test send; null once the message is gone). */
  eventType: string | null;
  attemptedAt: string;
  trigger: Trigger;
  statusCode: number | null;
  durationMs: number;
  outcome: string;
  error: string | null;
  responseHeaders: Record<string, string>;
  responseExcerpt: string;
}

export async function listAttempts(
  db: Pool,
  endpointId: string,
  opts: { limit: number; messageId?: string; before?: string },
): Promise<AttemptView[]> {
  const { rows } = await db.query<AttemptView & { attemptedAt: Date }>(
    `SELECT a.public_id::text AS id, a.message_id AS "messageId", CASE WHEN a.trigger = 'test' THEN $5::text ELSE m.event_type END AS "eventType",
            a.attempted_at AS "attemptedAt", a.trigger, a.status_code AS "statusCode", a.duration_ms AS "durationMs", a.outcome, a.error,
            a.response_headers AS "responseHeaders", a.response_excerpt AS "responseExcerpt"
       FROM webhook_attempts a LEFT JOIN webhook_messages m ON m.id = a.message_id
      WHERE a.endpoint_id = $1 AND ($2::text IS NULL OR a.message_id = $2)
        AND ($3::uuid IS NULL OR (a.attempted_at, a.id) < (SELECT attempted_at, id FROM webhook_attempts WHERE public_id = $3 AND endpoint_id = $1))
      -- webhook_attempts.id: the internal number (insertion order), never shown; customers see public_id
      ORDER BY a.attempted_at DESC, a.id DESC LIMIT $4`,
    [endpointId, opts.messageId ?? null, opts.before ?? null, opts.limit, TEST_EVENT_TYPE],
  );
  return rows.map((r) => ({ ...r, attemptedAt: r.attemptedAt.toISOString() }));
}

export interface DueDelivery {
  messageId: string;
  /** Attempts made since its schedule started (the dispatcher's first one included; after a replay, since the replay). */
  attemptsBefore: number;
  /** `replay`: this attempt is the replay a user asked for. */
  trigger: 'retry' | 'replay';
  payload: string;
  /** The trace of the event the message came from (the attempt is a span of it). */
  trace: EventTrace;
}

/** The endpoint's deliveries due now, earliest first, at most `limit`. */
export async function dueDeliveries(pool: Pool, endpointId: string, limit: number): Promise<DueDelivery[]> {
  const { rows } = await pool.query<{
    message_id: string;
    attempts: number;
    replayed_from: number | null;
    payload: string;
    traceparent: string | null;
    tracestate: string | null;
  }>(
    `SELECT d.message_id, d.attempts, d.replayed_from, m.payload, m.traceparent, m.tracestate
       FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.endpoint_id = $1 AND d.status = 'retrying' AND d.next_attempt_at <= now()
      ORDER BY d.next_attempt_at LIMIT $2`,
    [endpointId, limit],
  );
  return rows.map((r) => ({
    messageId: r.message_id,
    attemptsBefore: r.attempts - (r.replayed_from ?? 0),
    trigger: r.replayed_from === r.attempts ? 'replay' : 'retry',
    payload: r.payload,
    trace: { traceparent: r.traceparent ?? undefined, tracestate: r.tracestate ?? undefined },
  }));
}

/** When the endpoint's next waiting delivery is due (null: none waits), and the database's clock. */
export async function nextDue(pool: Pool, endpointId: string): Promise<{ dueAt: Date | null; now: Date }> {
  const { rows } = await pool.query<{ due_at: Date | null; now: Date }>(
    `SELECT min(next_attempt_at) AS due_at, now() AS now FROM webhook_deliveries
      WHERE endpoint_id = $1 AND status = 'retrying' AND next_attempt_at IS NOT NULL`,
    [endpointId],
  );
  return { dueAt: rows[0]!.due_at, now: rows[0]!.now };
}

/** Fails every delivery waiting on the endpoint's schedule (the endpoint was disabled or deleted); answers how many. */
export async function failWaitingDeliveries(pool: Pool, endpointId: string, error: string): Promise<number> {
  const { rowCount } = await pool.query(
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = $2, updated_at = now()
      WHERE endpoint_id = $1 AND status = 'retrying' AND next_attempt_at IS NOT NULL`,
    [endpointId, error],
  );
  return rowCount ?? 0;
}

/** An endpoint whose retry workflow must be told that deliveries are due. */
export interface EndpointToWake {
  endpointId: string;
  workspaceId: string;
  /** The workspace's slug (null: the workspace is gone). */
  workspace: string | null;
}

const endpointsToWake = (rows: { endpoint_id: string; workspace_id: string; workspace: string | null }[]) =>
  rows.map((r) => ({ endpointId: r.endpoint_id, workspaceId: r.workspace_id, workspace: r.workspace }));

/**
 * Deliveries pending for longer than `olderThanMs` that no live dispatcher holds: their dispatcher
 * died before recording their first attempt (its lease lapsed), or it is `self` and no longer `held`
 * by this process (its endpoint's lane was full, or this is a new process under the same name). A
 * delivery waiting in another live dispatcher's lane is left to it. Put on their endpoint's
 * schedule, due now (at most 500 at a time; those another sweeper is taking are skipped). Answers
 * their endpoints.
 */
export async function scheduleStalePendingDeliveries(
  pool: Pool,
  olderThanMs: number,
  self: string,
  held: (endpointId: string, messageId: string) => boolean,
): Promise<EndpointToWake[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ endpoint_id: string; message_id: string }>(
      `SELECT endpoint_id, message_id FROM webhook_deliveries d
        WHERE status = 'pending' AND created_at < now() - ($1::bigint * interval '1 millisecond')
          AND (d.dispatcher IS NULL OR d.dispatcher = $2 OR NOT EXISTS (
                SELECT 1 FROM webhook_dispatchers l WHERE l.consumer = d.dispatcher AND l.lease_until > now()))
        ORDER BY created_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
      [olderThanMs, self],
    );
    const stale = rows.filter((r) => !held(r.endpoint_id, r.message_id));
    const { rows: endpoints } = await client.query<{
      endpoint_id: string;
      workspace_id: string;
      workspace: string | null;
    }>(
      `WITH s AS (
         UPDATE webhook_deliveries d SET status = 'retrying', next_attempt_at = now(), updated_at = now()
           FROM unnest($1::uuid[], $2::text[]) AS u(e, m)
          WHERE d.endpoint_id = u.e AND d.message_id = u.m AND d.status = 'pending'
          RETURNING d.endpoint_id, d.workspace_id
       )
       SELECT DISTINCT s.endpoint_id, s.workspace_id, w.slug AS workspace FROM s LEFT JOIN workspaces w ON w.id = s.workspace_id`,
      [stale.map((r) => r.endpoint_id), stale.map((r) => r.message_id)],
    );
    await client.query('COMMIT');
    return endpointsToWake(endpoints);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Endpoints with a delivery due more than `overdueByMs` ago: their retry workflow was never told
 * (the dispatcher died between recording the failure and telling it, or the signal failed).
 */
export async function overdueEndpoints(pool: Pool, overdueByMs: number): Promise<EndpointToWake[]> {
  const { rows } = await pool.query<{ endpoint_id: string; workspace_id: string; workspace: string | null }>(
    `SELECT o.endpoint_id, o.workspace_id, w.slug AS workspace
       FROM (SELECT DISTINCT endpoint_id, workspace_id FROM webhook_deliveries
              WHERE status = 'retrying' AND next_attempt_at < now() - ($1::bigint * interval '1 millisecond')) o
       LEFT JOIN workspaces w ON w.id = o.workspace_id
      LIMIT 500`,
    [overdueByMs],
  );
  return endpointsToWake(rows);
}
