import pino, { type Logger, type LoggerOptions } from 'pino';
import { logDestination } from './log-shipper.js';
import { redactText, redactUrl } from './redact.js';

/**
 * Paths that may carry secrets; pino replaces their values before a line is written. Explicit
 * paths only: wildcard paths make pino inspect every key of every line, which cost about a quarter
 * of the API's CPU under load (bench:auth). Code never logs request bodies or headers wholesale.
 */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'password',
  'token',
  'secret',
  'apiKey',
  'refreshToken',
  'accessToken',
  'body.password',
  'body.token',
];

/**
 * The paths a Fastify server's logger redacts: the same but those under `req` and `res`, which its
 * serializers reduce to method and URL (`requestSerializer`, URL credentials redacted) and to the
 * status code (Fastify's own) before redaction, so those paths can never match. Each path costs
 * every line that has its first key: pino's redaction (@pinojs/redact) walks them on each line,
 * and every request's "request completed" line has both `req` and `res`.
 */
export const serverRedactPaths = redactPaths.filter((p) => !p.startsWith('req.') && !p.startsWith('res.'));

/** How deep a chain of `cause`s is followed on a log line. */
const MAX_CAUSES = 3;

/**
 * How an error appears on a log line (DESIGN §5): its name, message and stack, so that an
 * unexpected error can be found and fixed, with credentials and e-mail addresses replaced
 * (lib/redact.ts: PostgreSQL's messages can quote a value, a driver's a connection string); the
 * fields that name what failed (code, syscall, SQLSTATE severity, constraint, table, column); and
 * its `cause` chain the same way. Never a PostgreSQL `detail` (it quotes the row) or any other
 * field of the error. Expected refusals (4xx) are logged without their error (lib/http.ts).
 */
export function errorSerializer(err: unknown, depth = 0): Record<string, unknown> {
  if (!err || typeof err !== 'object') return { type: typeof err, message: redactText(String(err)) };
  const e = err as Record<string, unknown> & { constructor?: { name?: string } };
  const name = typeof e.name === 'string' && e.name !== 'Error' ? e.name : (e.constructor?.name ?? 'Error');
  const out: Record<string, unknown> = { type: name, name };
  if (typeof e.message === 'string') out.message = redactText(e.message);
  if (typeof e.stack === 'string') out.stack = redactText(e.stack);
  for (const k of [
    'code',
    'statusCode',
    'syscall',
    'errno',
    'severity',
    'routine',
    'constraint',
    'table',
    'column',
  ] as const) {
    const v = e[k];
    if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  }
  if (e.cause !== undefined && depth < MAX_CAUSES) out.cause = errorSerializer(e.cause, depth + 1);
  return out;
}

/**
 * Request URLs seen to hold no credential: a server sees few distinct URLs, so each is scanned
 * once rather than on every request's line. Only URLs the redaction leaves as they are, so that
 * no credential is kept; forgotten all at once when full (a caller can send any URL).
 */
const cleanUrls = new Set<string>();
const CLEAN_URLS_MAX = 1_000;
const CLEAN_URL_MAX_LENGTH = 256;

/** `url` with its credentials redacted (lib/redact.ts), scanned once per distinct URL. */
function redactedUrl(url: string): string {
  if (cleanUrls.has(url)) return url;
  const redacted = redactUrl(url);
  if (redacted === url && url.length <= CLEAN_URL_MAX_LENGTH) {
    if (cleanUrls.size >= CLEAN_URLS_MAX) cleanUrls.clear();
    cleanUrls.add(url);
  }
  return redacted;
}

/** A request on a log line: method and URL, with credentials in the URL redacted (lib/redact.ts). */
export function requestSerializer(req: unknown): Record<string, unknown> {
  const r = (req ?? {}) as { method?: unknown; url?: unknown };
  return { method: r.method, url: typeof r.url === 'string' ? redactedUrl(r.url) : r.url };
}

export const serializers = { err: (err: unknown) => errorSerializer(err), req: requestSerializer };

/** A process's logger: standard output, and the log store when LOG_STORE_URL is set (the `name` as its service). */
export function createLogger(options: LoggerOptions = {}): Logger {
  const opts = {
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor: '[redacted]' },
    serializers,
    ...options,
  };
  const destination = logDestination(options.name ?? 'platform');
  return destination ? pino(opts, destination) : pino(opts);
}

export type { Logger };
