/**
 * The account API's side of the agents service: every call carries the account API's service key
 * (pair account-api → agents, read from the secret store per call), the workspace of the verified
 * workspace key with a grant signed for it (workspace-grant.ts), the key's prefix for the
 * execution record, and the request id. Answers come back as fetch Responses, so that a stream can
 * be passed on chunk by chunk; `problemOf` turns a refusal into the account API's own problem.
 */
import { AppError, errorCodes, type ErrorCode } from '../../lib/errors.js';
import { WORKSPACE_GRANT_HEADER, type WorkspaceGrants } from './workspace-grant.js';

export interface AgentsCall {
  workspaceId: string;
  keyPrefix?: string | null;
  requestId: string;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
}

export function createAgentsClient(opts: { baseUrl: string; key: () => Promise<string>; grants: WorkspaceGrants }) {
  return {
    async call(method: 'GET' | 'POST', path: string, call: AgentsCall): Promise<Response> {
      const url = new URL(path, opts.baseUrl);
      for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const headers: Record<string, string> = {
        'x-api-key': await opts.key(),
        'x-workspace-id': call.workspaceId,
        [WORKSPACE_GRANT_HEADER]: opts.grants.issue(call.workspaceId),
        'x-request-id': call.requestId,
      };
      if (call.keyPrefix) headers['x-key-prefix'] = call.keyPrefix;
      if (call.body !== undefined) headers['content-type'] = 'application/json';
      try {
        return await fetch(url, {
          method,
          headers,
          body: call.body === undefined ? undefined : JSON.stringify(call.body),
          signal: call.signal,
        });
      } catch (err) {
        if (call.signal?.aborted) throw err;
        throw new AppError(
          'UNAVAILABLE',
          'The agents service cannot be reached right now; retry shortly.',
          {},
          { cause: err },
        );
      }
    },
  };
}

export type AgentsClient = ReturnType<typeof createAgentsClient>;

/**
 * The account API's problem for a refusal of the agents service: the caller's own mistakes (400,
 * 404) and the service's outages (502–504) keep their status and detail; a refused service key or
 * grant (401, 403) is the platform's fault, not the caller's: 502.
 */
export async function problemOf(res: Response): Promise<AppError> {
  const body = (await res.json().catch(() => undefined)) as { detail?: string } | undefined;
  const code = (Object.keys(errorCodes) as ErrorCode[]).find((c) => errorCodes[c].status === res.status);
  if (res.status === 401 || res.status === 403 || !code || res.status === 500) {
    return new AppError('BAD_GATEWAY', `The agents service failed (HTTP ${res.status}); retry later.`);
  }
  return new AppError(code, body?.detail ?? `The agents service answered HTTP ${res.status}.`);
}
