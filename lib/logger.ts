import pino, { type Logger, type LoggerOptions } from 'pino';

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
 * How an error appears on a log line: its class and code (and, for system and PostgreSQL errors,
 * the fields that name what failed), never its stack or, except for the platform's own AppError
 * texts, its message. Messages of other errors can carry request data: PostgreSQL's echo the
 * value that failed (`invalid input syntax for type uuid: "…"`, a key's `detail`), V8's JSON
 * errors echo the body. The request id is on every request's line already (`reqId`).
 */
export function errorSerializer(err: unknown): Record<string, unknown> {
  if (!err || typeof err !== 'object') return { type: typeof err };
  const e = err as Record<string, unknown> & { constructor?: { name?: string } };
  const out: Record<string, unknown> = { type: (typeof e.name === 'string' && e.name !== 'Error' ? e.name : e.constructor?.name) ?? 'Error' };
  for (const k of ['code', 'statusCode', 'syscall', 'errno', 'severity', 'routine'] as const) {
    const v = e[k];
    if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  }
  if (out.type === 'AppError' && typeof e.message === 'string') out.message = e.message;
  return out;
}

export const serializers = { err: errorSerializer };

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor: '[redacted]' },
    serializers,
    ...options,
  });
}

export type { Logger };
