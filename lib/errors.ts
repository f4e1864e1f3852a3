/**
 * Typed errors: a code maps to an HTTP status and a title; every HTTP error leaves the platform
 * as an RFC 9457 problem body (`application/problem+json`) with `code` and `requestId`.
 */
export const errorCodes = {
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  CONFLICT: { status: 409, title: 'Conflict' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  INTERNAL: { status: 500, title: 'Internal server error' },
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
  ) {
    super(message);
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
