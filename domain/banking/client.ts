/**
 * The account API's client of the banking service (§5.4: account API → banking service,
 * `X-API-Key`). The key is read from the secret store per call (cached briefly), so a rotated key
 * reaches the account API without a restart. The workspace the call acts for goes in
 * `X-Workspace-Id`. The banking service's problem answers are passed on as AppErrors with their
 * status, detail and bank; a banking service that cannot be reached is a 503, never a 500.
 */
import { AppError, codeForStatus } from '../../lib/errors.js';
import type { SecretStore } from '../service-keys/secret-store.js';

export const BANKING_CALLER = 'account-api';
export const BANKING_TARGET = 'banking';

export interface BankingCall {
  method: 'GET' | 'POST';
  path: string;
  workspaceId?: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  psuIpAddress?: string;
}

export class BankingClient {
  constructor(
    private readonly baseUrl: string,
    private readonly secrets: SecretStore,
    private readonly timeoutMs: number,
  ) {}

  async call<T = unknown>(c: BankingCall): Promise<{ status: number; body: T }> {
    const { key } = await this.secrets.current(BANKING_CALLER, BANKING_TARGET);
    const url = new URL(c.path, this.baseUrl);
    for (const [k, v] of Object.entries(c.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const headers: Record<string, string> = { 'x-api-key': key, accept: 'application/json' };
    if (c.workspaceId) headers['x-workspace-id'] = c.workspaceId;
    if (c.psuIpAddress) headers['x-psu-ip-address'] = c.psuIpAddress;
    if (c.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method: c.method,
        headers,
        body: c.body === undefined ? undefined : JSON.stringify(c.body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new AppError(
        'UNAVAILABLE',
        `The banking service ${timedOut ? 'did not answer in time' : 'cannot be reached'}; retry shortly.`,
        { dependency: 'banking' },
        { cause: err },
      );
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      throw new AppError('BAD_GATEWAY', `The banking service sent an answer that is not JSON (HTTP ${res.status}).`);
    }
    if (res.ok) return { status: res.status, body: body as T };
    const p = (body ?? {}) as { detail?: unknown; bankId?: unknown; bankCode?: unknown; errors?: unknown };
    const extra: Record<string, unknown> = {};
    if (typeof p.bankId === 'string') extra.bankId = p.bankId;
    if (typeof p.bankCode === 'string') extra.bankCode = p.bankCode;
    // our own key refused, or the service failing: the workspace cannot fix either
    if (res.status === 401 || res.status >= 500) {
      if (res.status === 502 || res.status === 503)
        throw new AppError(
          codeForStatus(res.status),
          typeof p.detail === 'string' ? p.detail : 'The banking service is unavailable.',
          extra,
        );
      throw new AppError('BAD_GATEWAY', `The banking service failed to answer (HTTP ${res.status}).`, extra);
    }
    if (Array.isArray(p.errors)) extra.errors = p.errors;
    throw new AppError(
      codeForStatus(res.status),
      typeof p.detail === 'string' ? p.detail : `The banking service refused the request (HTTP ${res.status}).`,
      extra,
    );
  }
}
