/**
 * Typed errors: a code maps to an HTTP status and a title; every HTTP error leaves the platform
 * as an RFC 9457 problem body (`application/problem+json`) with `code` and `requestId`.
 */
export const errorCodes = {
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  /** A workspace whose payment failed past its grace period (DESIGN §5): its keys are refused; interactive login still works. */
  WORKSPACE_SUSPENDED: { status: 403, title: 'Workspace suspended' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  CONFLICT: { status: 409, title: 'Conflict' },
  GONE: { status: 410, title: 'Gone' },
  LENGTH_REQUIRED: { status: 411, title: 'Length required' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Content too large' },
  URI_TOO_LONG: { status: 414, title: 'URI too long' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  UNPROCESSABLE: { status: 422, title: 'Unprocessable content' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  INTERNAL: { status: 500, title: 'Internal server error' },
  NOT_IMPLEMENTED: { status: 501, title: 'Not implemented' },
  BAD_GATEWAY: { status: 502, title: 'Bad gateway' },
  UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  GATEWAY_TIMEOUT: { status: 504, title: 'Gateway timeout' },
} as const;

export type ErrorCode = keyof typeof errorCodes;

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    /** `cause`: the failure behind it (logged with a 5xx, never answered). */
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
  get status(): number {
    return errorCodes[this.code].status;
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId?: string;
  instance?: string;
  [extension: string]: unknown;
}

export const PROBLEM_BASE = 'https://docs.plana.dev/problems/';

export function problem(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}): Problem {
  const { status, title } = errorCodes[code];
  return { type: `${PROBLEM_BASE}${code.toLowerCase().replace(/_/g, '-')}`, title, status, detail, code, ...extra };
}

export function codeForStatus(status: number): ErrorCode {
  const found = (Object.keys(errorCodes) as ErrorCode[]).find((c) => errorCodes[c].status === status);
  return found ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
}

/** Connection-level failures: the peer is down, restarting, refusing or unreachable. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/**
 * PostgreSQL SQLSTATEs that mean "the server cannot serve now", not "your query is wrong":
 * class 08 (connection exception), 57P01-57P03 (admin shutdown, crash shutdown, cannot connect
 * now), 53300 (too many connections), 53xxx (insufficient resources), 58xxx (system error).
 */
const PG_UNAVAILABLE = /^(08...|57P0[1-3]|53...|58...)$/;
const PG_CLIENT_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
];
const REDIS_MESSAGES = ['Connection is closed.', "Stream isn't writeable", 'Reached the max retries per request limit'];

/**
 * When `err` says a dependency of the platform is down (rather than that the request was wrong),
 * the part's name for a 503 detail; undefined otherwise. One place for every server's mapping
 * (lib/http.ts): PostgreSQL (pg and pg-pool errors), Redis (ioredis) and Temporal (gRPC
 * UNAVAILABLE / connection errors).
 */
export function unavailableDependency(err: unknown): 'PostgreSQL' | 'Redis' | 'Temporal' | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as { name?: unknown; code?: unknown; message?: unknown; severity?: unknown; cause?: unknown };
  const name = typeof e.name === 'string' ? e.name : '';
  const code = typeof e.code === 'string' || typeof e.code === 'number' ? String(e.code) : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.some((m) => message.startsWith(m))) return 'Redis';
  if (name === 'ReplyError' && /^(LOADING|MASTERDOWN|CLUSTERDOWN|BUSY )/.test(message)) return 'Redis';
  if (typeof e.severity === 'string' && PG_UNAVAILABLE.test(code)) return 'PostgreSQL';
  if (PG_CLIENT_MESSAGES.some((m) => message.startsWith(m))) return 'PostgreSQL';
  if (
    name === 'ServiceError' ||
    name === 'TransportError' ||
    name === 'ConnectionError' ||
    name.startsWith('Temporal')
  ) {
    // gRPC status 14 UNAVAILABLE (or 4 DEADLINE_EXCEEDED) from the Temporal frontend
    const grpc = (e.cause as { code?: unknown } | undefined)?.code ?? e.code;
    if (grpc === 14 || grpc === 4 || name === 'TransportError' || name === 'ConnectionError') return 'Temporal';
  }
  // a bare socket error reaching a request: the only peers a request talks to directly over pg are
  // PostgreSQL's; ioredis never hands socket errors to commands (they fail with the errors above)
  if (CONNECTION_CODES.has(code) && (e as { syscall?: unknown }).syscall !== undefined) return 'PostgreSQL';
  return undefined;
}
