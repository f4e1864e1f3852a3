/**
 * A failed call of the service-key writer on the Kubernetes API, in the platform's terms: the verb,
 * the Secret, the HTTP status and the Status reason, with a hint for the usual causes (refused
 * credentials, RBAC, a concurrent writer). Built from @kubernetes/client-node's ApiException or the
 * network error, never from their messages (those may quote request or answer bodies).
 */
import { ApiException } from '@kubernetes/client-node';
import { AppError, type ErrorCode } from '../../lib/errors.js';

export interface SecretCall {
  verb: 'get' | 'create' | 'patch';
  namespace: string;
  name: string;
}

export class KubernetesApiError extends AppError {
  constructor(
    readonly httpStatus: number,
    readonly reason: string,
    message: string,
  ) {
    super(codeFor(httpStatus), message, { kubernetesStatus: httpStatus, reason });
  }
}

const codeFor = (status: number): ErrorCode =>
  status === 404 ? 'NOT_FOUND' : status === 409 ? 'CONFLICT' : 'UNAVAILABLE';

/** metav1.StatusReason per HTTP status, for answers the client hands over without their body (its 401). */
const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The Status reason of an answer body (parsed or text), else the usual one of its status code. */
function reasonOf(body: unknown, status: number): string {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
  }
  const reason = (parsed as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' && /^\w+$/.test(reason) ? reason : (REASONS[status] ?? String(status));
}

function hint(status: number, call: SecretCall, credentials: string): string {
  const secret = `Secret ${call.namespace}/${call.name}`;
  if (status === 401) return `: the credentials of ${credentials} were refused; are they current and for this cluster?`;
  if (status === 403)
    return `: ${credentials} may not ${call.verb} ${secret} (RBAC: get, create, patch on secrets in ${call.namespace}).`;
  if (status === 409) return `: ${secret} changed in between.`;
  if (status === 404) return `: ${secret} or its namespace not found.`;
  return '.';
}

export function kubernetesApiError(err: unknown, call: SecretCall, credentials: string, timeoutMs: number): AppError {
  const what = `Kubernetes API ${call.verb} Secret ${call.namespace}/${call.name}`;
  if (err instanceof AppError) return err;
  if (err instanceof ApiException) {
    const status = err.code;
    const reason = reasonOf(err.body, status);
    return new KubernetesApiError(
      status,
      reason,
      `${what} answered ${status} ${reason}${hint(status, call, credentials)}`,
    );
  }
  if ((err as Error).name === 'AbortError')
    return new AppError('UNAVAILABLE', `${what} timed out after ${timeoutMs} ms.`);
  // a network or TLS failure (node-fetch's FetchError carries the system error's code)
  const code = (err as { code?: unknown }).code;
  const cause = typeof code === 'string' ? code : (err as Error).name;
  return new AppError('UNAVAILABLE', `${what} failed: ${cause}.`);
}
