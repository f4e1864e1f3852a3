/**
 * The execution log as the log store holds it (mirrored by ./execution-log-mirror.ts): a
 * workspace's calls over a recent period, newest first, each once. The mirror sends a batch again
 * after a crash between its POST and its commit, so the query keeps one line per `entry_id`.
 */
import { LogStoreUnavailable, logsqlString, queryLogs } from '../../lib/log-store.js';
import { AppError } from '../../lib/errors.js';
import { EXECUTION_LOG_STREAM } from './execution-log-mirror.js';

export interface StoredCall {
  /** The row's public id in PostgreSQL (the idempotency field of the mirror). */
  id: string;
  occurredAt: string;
  keyPrefix: string;
  method: string;
  route: string;
  status: number;
  latencyMs: number;
  requestId: string;
}

export interface StoredLogFilter {
  /** How far back, as a LogsQL duration: 30m, 1h, 7d (at most the store's retention). */
  since: string;
  /** Routes containing this. */
  route?: string;
  status?: number;
  /** The call with this request id (the trace id of a problem body's `requestId`). */
  requestId?: string;
  limit: number;
}

/** A duration the readers take for `since`: a number and one unit (s, m, h, d, w). */
export const SINCE_PATTERN = '^[1-9][0-9]{0,5}[smhdw]$';

/** The LogsQL query of a workspace's calls matching `filter`, deduplicated, newest first. */
export function executionLogQuery(workspaceId: string, filter: StoredLogFilter): string {
  const where = [
    `{log=${logsqlString(EXECUTION_LOG_STREAM)},workspace_id=${logsqlString(workspaceId)}}`,
    `_time:${filter.since}`,
  ];
  if (filter.route !== undefined) where.push(`route:*${logsqlString(filter.route)}*`);
  if (filter.status !== undefined) where.push(`status:=${filter.status}`);
  if (filter.requestId !== undefined) where.push(`request_id:=${logsqlString(filter.requestId)}`);
  return `${where.join(' ')} | first 1 by (_time desc) partition by (entry_id) | sort by (_time desc) limit ${filter.limit}`;
}

/** The workspace's calls from the store; a 503 problem when the store is not configured or does not answer. */
export async function readStoredExecutionLog(
  storeUrl: string | undefined,
  workspaceId: string,
  filter: StoredLogFilter,
): Promise<StoredCall[]> {
  if (!storeUrl)
    throw new AppError(
      'UNAVAILABLE',
      'No log store is configured (LOG_STORE_URL): the execution log is in PostgreSQL only (the portal reads it there).',
    );
  let entries: Record<string, string>[];
  try {
    entries = await queryLogs(storeUrl, executionLogQuery(workspaceId, filter), filter.limit);
  } catch (err) {
    if (!(err instanceof LogStoreUnavailable)) throw err;
    throw new AppError(
      'UNAVAILABLE',
      'The log store did not answer. No call is lost: the execution log is kept in PostgreSQL and mirrored to the store when it is back; the portal reads the recent days from PostgreSQL.',
    );
  }
  return entries.map((e) => ({
    id: e.entry_id ?? '',
    occurredAt: e._time ?? '',
    keyPrefix: e.key_prefix ?? '',
    method: e.method ?? '',
    route: e.route ?? '',
    status: Number(e.status),
    latencyMs: Number(e.latency_ms),
    requestId: e.request_id ?? '',
  }));
}
