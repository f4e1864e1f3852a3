/**
 * The execution log's mirror to the log store (specification §5.2 rule 4: "mirrored to a log store
 * with 90-day retention"). PostgreSQL's `execution_log` stays the durable record the API writes
 * (./execution-log.ts); this loop ships its rows from there, so the store being down never touches
 * the API and loses nothing: the rows wait in PostgreSQL and go out when the store is back.
 *
 * Each batch is one transaction: lock the cursor row (a replica that finds it locked skips the
 * round), read the next rows in (xid, id) order below the oldest transaction still running (every
 * transaction below it has ended, so no row can commit behind the cursor later), POST them, move
 * the cursor, commit. A crash between the POST and the commit sends the batch again: each line
 * carries the row's `entry_id`, by which readers dedupe (./execution-log-store.ts).
 */
import type pg from 'pg';
import client from 'prom-client';
import type { Logger } from '../../lib/logger.js';
import { insertJsonLines, type JsonLineFields } from '../../lib/log-store.js';

/** How execution-log lines are stored: one stream per workspace, apart from the services' own lines. */
export const EXECUTION_LOG_FIELDS: JsonLineFields = {
  msgField: 'msg',
  timeField: 'time',
  streamFields: ['log', 'workspace_id'],
};

/** The `log` field of every execution-log line in the store. */
export const EXECUTION_LOG_STREAM = 'execution';

const BATCH_ROWS = 1_000;
/** The longest wait between attempts while the store is down. */
const MAX_BACKOFF_MS = 60_000;

const mirrored = new client.Counter({
  name: 'plana_execution_log_mirrored_rows_total',
  help: 'Execution-log rows shipped from PostgreSQL to the log store',
});
const failures = new client.Counter({
  name: 'plana_execution_log_mirror_failures_total',
  help: 'Mirror batches that did not reach the log store (they are sent again)',
});

interface Row {
  xid: string;
  id: string;
  entry_id: string;
  occurred_at: Date;
  workspace_id: string;
  key_prefix: string;
  method: string;
  route: string;
  status: number;
  latency_ms: number;
  request_id: string;
}

/** A row as a line of the store: the call's fields, the key's prefix only (never a token). */
function jsonLine(r: Row): string {
  return JSON.stringify({
    time: r.occurred_at.toISOString(),
    msg: `${r.method} ${r.route} ${r.status}`,
    log: EXECUTION_LOG_STREAM,
    workspace_id: r.workspace_id,
    key_prefix: r.key_prefix,
    method: r.method,
    route: r.route,
    status: r.status,
    latency_ms: r.latency_ms,
    request_id: r.request_id,
    entry_id: r.entry_id,
  });
}

/**
 * Ships the next batch (at most `limit` rows). Answers how many rows went out; 0 when none were
 * waiting or another replica holds the cursor. Throws when the store did not take them (nothing moved).
 */
export async function shipExecutionLogBatch(pool: pg.Pool, storeUrl: string, limit = BATCH_ROWS): Promise<number> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    const cursor = await db.query<{ xid: string; id: string }>(
      'SELECT xid::text, id::text FROM execution_log_mirror_cursor FOR UPDATE SKIP LOCKED',
    );
    const at = cursor.rows[0];
    const { rows } = at
      ? await db.query<Row>(
          `SELECT xid::text, id::text, public_id::text AS entry_id, occurred_at, workspace_id, key_prefix, method,
                  route, status, latency_ms, request_id
             FROM execution_log
            WHERE (xid, id) > ($1::xid8, $2::bigint) AND xid < pg_snapshot_xmin(pg_current_snapshot())
            -- the columns, not the text selected under their names: as text, '100' sorts before '99'
            ORDER BY execution_log.xid, execution_log.id LIMIT $3`,
          [at.xid, at.id, limit],
        )
      : { rows: [] as Row[] };
    const last = rows[rows.length - 1];
    if (!last) {
      await db.query('ROLLBACK');
      return 0;
    }
    await insertJsonLines(storeUrl, rows.map((r) => `${jsonLine(r)}\n`).join(''), EXECUTION_LOG_FIELDS);
    await db.query('UPDATE execution_log_mirror_cursor SET xid = $1::xid8, id = $2, moved_at = now()', [
      last.xid,
      last.id,
    ]);
    await db.query('COMMIT');
    mirrored.inc(rows.length);
    return rows.length;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    db.release();
  }
}

/** Ships batches until none is full (the mirror has caught up); answers how many rows went out. */
export async function shipExecutionLog(pool: pg.Pool, storeUrl: string, limit = BATCH_ROWS): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await shipExecutionLogBatch(pool, storeUrl, limit);
    total += n;
    if (n < limit) return total;
  }
}

/**
 * The mirror loop: ships every `intervalMs`; after a failure waits twice as long each time (up to a
 * minute), warns once per outage, and says when it has caught up again.
 */
export function startExecutionLogMirror(deps: { pool: pg.Pool; storeUrl: string; intervalMs: number; log: Logger }): {
  stop(): Promise<void>;
} {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: () => void = () => {};
  const loop = (async () => {
    let delay = deps.intervalMs;
    let failing = false;
    while (!stopped) {
      try {
        const shipped = await shipExecutionLog(deps.pool, deps.storeUrl);
        if (failing) deps.log.info({ shipped }, 'execution log mirror: the log store is back; caught up');
        failing = false;
        delay = deps.intervalMs;
      } catch (err) {
        failures.inc();
        if (!failing) deps.log.warn({ err }, 'execution log mirror: shipping failed; the rows wait in PostgreSQL');
        failing = true;
        delay = Math.min(delay * 2, MAX_BACKOFF_MS);
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, delay);
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wake();
      await loop;
    },
  };
}
