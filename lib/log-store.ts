/**
 * The log store's HTTP API (VictoriaLogs): JSON lines in through `/insert/jsonline`, LogsQL queries
 * out through `/select/logsql/query` (one JSON object per line). Every call has a deadline; a store
 * that does not answer, or answers an error, is a LogStoreUnavailable.
 */

/** The store did not take or answer a request (down, unreachable, or an error status). */
export class LogStoreUnavailable extends Error {
  override name = 'LogStoreUnavailable';
}

/** How the store reads a batch: which field is the message, which the time, which name the stream. */
export interface JsonLineFields {
  msgField: string;
  timeField: string;
  streamFields: string[];
  /** Fields added to every line of the batch (`name=value`), e.g. the service that wrote them. */
  extraFields?: Record<string, string>;
}

const INSERT_TIMEOUT_MS = 10_000;
const QUERY_TIMEOUT_MS = 15_000;

/** Sends `body` (JSON objects, one per line, each ending in a newline) to the store. */
export async function insertJsonLines(baseUrl: string, body: string, fields: JsonLineFields): Promise<void> {
  const params = new URLSearchParams({
    _msg_field: fields.msgField,
    _time_field: fields.timeField,
    _stream_fields: fields.streamFields.join(','),
  });
  const extra = Object.entries(fields.extraFields ?? {});
  if (extra.length) params.set('extra_fields', extra.map(([k, v]) => `${k}=${v}`).join(','));
  // the content type matters: a form-encoded body would be read as form fields, and nothing stored
  await call(`${baseUrl}/insert/jsonline?${params}`, INSERT_TIMEOUT_MS, {
    method: 'POST',
    headers: { 'content-type': 'application/stream+json' },
    body,
  });
}

/** The entries a LogsQL query answers, as the store returns them (every field a string). */
export async function queryLogs(baseUrl: string, query: string, limit: number): Promise<Record<string, string>[]> {
  const res = await call(`${baseUrl}/select/logsql/query`, QUERY_TIMEOUT_MS, {
    method: 'POST',
    body: new URLSearchParams({ query, limit: String(limit) }),
  });
  const text = await res.text();
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, string>);
}

/** A LogsQL quoted string: the value is matched as is, whatever characters it holds. */
export const logsqlString = (value: string) => JSON.stringify(value);

async function call(url: string, timeoutMs: number, init: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new LogStoreUnavailable(`the log store at ${new URL(url).origin} did not answer`, { cause: err });
  }
  if (!res.ok) {
    const detail = (await res.text().catch(() => '')).slice(0, 300);
    throw new LogStoreUnavailable(`the log store answered ${res.status}: ${detail}`);
  }
  return res;
}
