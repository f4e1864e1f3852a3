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

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor: '[redacted]' },
    ...options,
  });
}

export type { Logger };
