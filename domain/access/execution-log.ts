/**
 * The per-workspace execution log (specification §5.2 rule 4, §8): every call made with a
 * workspace key, as one pino JSON line (the log store: Fastify's "request completed" line of the
 * call, with workspace id, key prefix, method and route bound by api/plugins/workspace-auth.ts)
 * and one row of `execution_log` in PostgreSQL. Rows are buffered in memory and written in batches
 * (one COPY per flush interval, through pg-copy-streams: the cheapest way into PostgreSQL for both
 * sides), so the hot path never waits for the database; a crash loses at most one interval of
 * rows, never the pino lines. The table is partitioned by day: retention drops whole partitions.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { AppError } from '../../lib/errors.js';
import { open, purposeKey, seal } from '../../lib/secret-box.js';

export interface ExecutionRecord {
  /** When the call was answered, in milliseconds since the epoch (Date.now()). */
  occurredAt: number;
  workspaceId: string;
  keyPrefix: string;
  method: string;
  route: string;
  status: number;
  latencyMs: number;
  requestId: string;
}

const DAY_MS = 86_400_000;
const utcDay = (d: Date) => d.toISOString().slice(0, 10);

/** Creates the daily partitions from yesterday to `aheadDays` days ahead (idempotent). */
export async function ensurePartitions(pool: pg.Pool, aheadDays: number, now = new Date()): Promise<void> {
  await pool.query('SELECT execution_log_ensure_partitions($1::date, $2)', [
    utcDay(new Date(now.getTime() - DAY_MS)),
    aheadDays + 2,
  ]);
}

/** Drops the partitions whose whole day lies more than `retentionDays` before `now`. */
export async function dropExpiredPartitions(pool: pg.Pool, retentionDays: number, now = new Date()): Promise<string[]> {
  const cutoff = utcDay(new Date(now.getTime() - retentionDays * DAY_MS)).replace(/-/g, '');
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname = 'execution_log' ORDER BY c.relname`,
  );
  const expired = rows.map((r) => r.name).filter((n) => /^execution_log_p\d{8}$/.test(n) && n.slice(-8) < cutoff);
  for (const name of expired) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
  return expired;
}

export class ExecutionLog {
  /**
   * The calls not written yet, as recorded: formatted for COPY when written, so that a call costs
   * the hot path one array push (no date or text built per request, nothing more kept alive).
   */
  private buffer: ExecutionRecord[] = [];
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { pool: pg.Pool; log: FastifyBaseLogger; flushMs: number; partitionsAhead: number },
  ) {
    this.timer = setInterval(() => void this.flush(), deps.flushMs);
    this.timer.unref();
  }

  /** Buffers a call for the next batch (its pino line is the request's own "request completed"). */
  record(rec: ExecutionRecord) {
    this.buffer.push(rec);
  }

  /** Writes what is buffered; on failure keeps the rows for the next attempt (bounded). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      await this.insert(batch);
    } catch (first) {
      let err = first;
      if ((err as { code?: string }).code === '23514') {
        // no partition for some row (a day not created yet): create them and try once more
        await ensurePartitions(this.deps.pool, this.deps.partitionsAhead).catch(() => {});
        try {
          return await this.insert(batch);
        } catch (again) {
          err = again;
        }
      }
      this.deps.log.error(
        { err, rows: batch.length },
        'execution log: writing rows failed; keeping them for the next flush',
      );
      this.buffer = [...batch, ...this.buffer].slice(-50_000);
    }
  }

  private async insert(batch: ExecutionRecord[]) {
    const client = await this.deps.pool.connect();
    try {
      const copy = client.query(
        copyFrom(
          'COPY execution_log (occurred_at, workspace_id, key_prefix, method, route, status, latency_ms, request_id) FROM STDIN',
        ),
      );
      await pipeline(Readable.from([copyText(batch)]), copy);
      client.release();
    } catch (err) {
      client.release(err as Error); // a failed COPY: do not hand this connection out again
      throw err;
    }
  }
}

/** One row in COPY's text format: tab-separated, with backslash, tab and line breaks escaped. */
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const SPECIAL = /[\\\t\n\r]/;
const text = (v: string) => (SPECIAL.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : v);

/** The rows of a batch in COPY's text format; a second's ISO 8601 prefix is built once for all its rows. */
function copyText(batch: ExecutionRecord[]): string {
  let second = NaN;
  let prefix = '';
  let out = '';
  for (const r of batch) {
    const s = Math.floor(r.occurredAt / 1000);
    if (s !== second) {
      second = s;
      prefix = new Date(s * 1000).toISOString().slice(0, 20); // 2026-01-31T12:00:00.
    }
    const ms = String(Math.floor(r.occurredAt) - s * 1000).padStart(3, '0');
    out += `${prefix}${ms}Z\t${r.workspaceId}\t${text(r.keyPrefix)}\t${text(r.method)}\t${text(r.route)}\t${r.status}\t${r.latencyMs}\t${text(r.requestId)}\n`;
  }
  return out;
}

export interface ExecutionLogPage {
  items: (Omit<ExecutionRecord, 'workspaceId' | 'occurredAt'> & { id: string; occurredAt: string })[];
  nextCursor: string | null;
}

/** Optional filters of the log: key prefix (starts with), route (contains), exact status, time range [since, until). */
export interface ExecutionLogFilter {
  keyPrefix?: string;
  route?: string;
  status?: number;
  since?: string;
  until?: string;
}

const CURSOR_PURPOSE = 'plana execution-log cursor v2';

/**
 * A page's cursor: the workspace it was issued for and the (occurred_at, internal id) of the page's
 * last item, sealed (AES-256-GCM under a key derived from SECRETS_KEY), so it is opaque and cannot
 * be forged: the internal id counts every workspace's calls and is never shown. Another workspace's
 * cursor is refused exactly as a forged one.
 */
export function executionLogCursor(secretsKey: string, workspaceId: string, at: Date, internalId: string): string {
  return seal(`${workspaceId}|${at.toISOString()}|${internalId}`, purposeKey(secretsKey, CURSOR_PURPOSE));
}

function openCursor(secretsKey: string, workspaceId: string, cursor: string): [string, string] {
  const invalid = () =>
    new AppError('BAD_REQUEST', 'cursor is not one this API returned; use nextCursor of the previous page.');
  let decoded: string[];
  try {
    decoded = open(cursor, purposeKey(secretsKey, CURSOR_PURPOSE)).split('|');
  } catch {
    throw invalid();
  }
  const [issuedFor, at, id] = decoded;
  if (decoded.length !== 3 || issuedFor !== workspaceId || Number.isNaN(Date.parse(at!)) || !/^\d+$/.test(id!))
    throw invalid();
  return [at!, id!];
}

/**
 * Newest first, keyset pagination on (occurred_at, internal id) behind an opaque cursor. Items
 * carry their random public id.
 */
export async function readExecutionLog(
  pool: pg.Pool,
  workspaceId: string,
  opts: { limit: number; cursor?: string; secretsKey: string } & ExecutionLogFilter,
): Promise<ExecutionLogPage> {
  const before = opts.cursor ? openCursor(opts.secretsKey, workspaceId, opts.cursor) : undefined;
  const { rows } = await pool.query<
    Omit<ExecutionRecord, 'workspaceId' | 'occurredAt'> & { id: string; internalId: string; occurredAt: Date }
  >(
    `SELECT public_id::text AS id, id::text AS "internalId", occurred_at AS "occurredAt", key_prefix AS "keyPrefix", method, route, status,
            latency_ms AS "latencyMs", request_id AS "requestId"
       FROM execution_log
      WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (occurred_at, id) < ($2::timestamptz, $3::bigint))
        AND ($5::text IS NULL OR starts_with(key_prefix, $5)) AND ($6::text IS NULL OR strpos(route, $6) > 0)
        AND ($7::int IS NULL OR status = $7) AND ($8::timestamptz IS NULL OR occurred_at >= $8)
        AND ($9::timestamptz IS NULL OR occurred_at < $9)
      -- execution_log.id: the internal number, not the public id selected above
      ORDER BY occurred_at DESC, execution_log.id DESC LIMIT $4`,
    [
      workspaceId,
      before?.[0] ?? null,
      before?.[1] ?? null,
      opts.limit + 1,
      opts.keyPrefix ?? null,
      opts.route ?? null,
      opts.status ?? null,
      opts.since ?? null,
      opts.until ?? null,
    ],
  );
  const page = rows.slice(0, opts.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(({ internalId: _, ...r }) => ({ ...r, occurredAt: r.occurredAt.toISOString() })),
    nextCursor:
      rows.length > opts.limit && last
        ? executionLogCursor(opts.secretsKey, workspaceId, last.occurredAt, last.internalId)
        : null,
  };
}
