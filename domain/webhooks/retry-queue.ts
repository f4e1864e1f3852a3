/**
 * The deliveries waiting on their endpoint's retry schedule (webhook_deliveries.next_attempt_at,
 * status 'retrying'): the ones due now, when the next one is due, failing them all when the
 * endpoint is gone, and what the dispatcher's sweeper hands to the endpoints' retry workflows
 * (deliveries left pending, deliveries overdue because their workflow was never told).
 */
import type { Pool } from 'pg';

export interface DueDelivery {
  messageId: string;
  /** Attempts made since its schedule started (the dispatcher's first one included; after a replay, since the replay). */
  attemptsBefore: number;
  /** `replay`: this attempt is the replay a user asked for. */
  trigger: 'retry' | 'replay';
  payload: string;
}

/** The endpoint's deliveries due now, earliest first, at most `limit`. */
export async function dueDeliveries(pool: Pool, endpointId: string, limit: number): Promise<DueDelivery[]> {
  const { rows } = await pool.query<{
    message_id: string;
    attempts: number;
    replayed_from: number | null;
    payload: string;
  }>(
    `SELECT d.message_id, d.attempts, d.replayed_from, m.payload
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
