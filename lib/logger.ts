import pino, { type Logger, type LoggerOptions } from 'pino';

/** Paths that may carry secrets; pino replaces their values before a line is written. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.password',
  '*.token',
  '*.secret',
  '*.apiKey',
];

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor: '[redacted]' },
    ...options,
  });
}

export type { Logger };
