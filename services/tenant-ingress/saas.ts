/**
 * The tenant ERPs' SaaS endpoints (§4.7 `/svc/saas/…`): the tenant ingress forwards each request
 * to the account API (`/api/saas/<tenant>/…`, api/routes/saas/index.ts), and so does the ERP
 * stand-in where it plays the ingress (scripts/erp-stand-in.ts hands it this forwarding), so every tenant answers from the platform's
 * own tier and subscription data; no data is copied into the ERP.
 *
 * The tenant's host is public, and the reads answer the tenant's tier, seats, billing period and
 * next invoice: they are for the tenant's ERP and the platform, never for anyone who knows a host.
 * A read goes on
 *
 * - with the caller's own `X-API-Key` (the platform's erp or saas-jobs key; the account API decides), or
 * - for a caller logged in to this tenant's ERP (its web session, as the ERP checks it: `loggedIn`),
 *   with the ERP entry's own service key (erp → account-api);
 *
 * anyone else gets 401. The legacy callbacks carry their caller's `X-API-Key` through unchanged
 * (saas-jobs → account-api): the platform checks who reports, the ERP entry holds no key that
 * could vouch for it.
 */
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { problem } from '../../lib/errors.js';

export interface SaasForwarding {
  accountApiUrl: string;
  /** The ERP entry's current key for the account API (erp → account-api). */
  key: () => Promise<string>;
  /** Whether the request carries a live web session of the tenant's ERP (a logged-in ERP user). */
  loggedIn: (req: IncomingMessage) => Promise<boolean>;
}

/** The ERP web session a request carries (Odoo's `session_id` cookie), if any. */
export const erpSessionId = (req: IncomingMessage): string | undefined =>
  /(?:^|;\s*)session_id=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];

/**
 * `loggedIn` in front of an Odoo (the tenant ingress): asks the ERP itself whether the request's
 * `session_id` is a logged-in session of the tenant's database (Odoo's
 * `/web/session/get_session_info` answers the user id, or the session-expired error), with the
 * request's Host (Odoo picks the database by it). Only that cookie goes to the ERP.
 */
export function sessionAtErp(upstream: string, timeoutMs = 10_000): SaasForwarding['loggedIn'] {
  const base = new URL(upstream);
  const send = base.protocol === 'https:' ? httpsRequest : request;
  return (req) => {
    const sid = erpSessionId(req);
    if (!sid) return Promise.resolve(false);
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'call', params: {} });
    return new Promise<boolean>((resolve) => {
      const check = send(
        new URL('/web/session/get_session_info', base),
        {
          method: 'POST',
          headers: {
            host: req.headers.host ?? base.host,
            cookie: `session_id=${sid}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
          timeout: timeoutMs,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            try {
              const uid = (JSON.parse(text) as { result?: { uid?: unknown } }).result?.uid;
              resolve(res.statusCode === 200 && typeof uid === 'number' && uid > 0);
            } catch {
              resolve(false);
            }
          });
        },
      );
      // an ERP that cannot say: not logged in
      check.on('timeout', () => check.destroy());
      check.on('error', () => resolve(false));
      check.end(body);
    });
  };
}

function unauthorized(res: ServerResponse) {
  const body = problem(
    'UNAUTHORIZED',
    "The SaaS endpoints answer the tenant's ERP only: log in to the ERP, or send the platform's service key in X-API-Key.",
  );
  res.writeHead(401, { 'content-type': 'application/problem+json' }).end(JSON.stringify(body));
}

const READS: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^\/svc\/saas\/tiers\/?$/, () => 'tiers'],
  [/^\/svc\/saas\/tier\/([^/]+)\/modules\/?$/, (m) => `tier/${m[1]}/modules`],
  [/^\/svc\/saas\/subscription\/([^/]+)\/?$/, (m) => `subscription/${m[1]}`],
];
const CALLBACKS: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^\/svc\/saas\/job\/([^/]+)\/update\/?$/, (m) => `job/${m[1]}/update`],
  [/^\/svc\/saas\/backup\/callback\/?$/, () => 'backup/callback'],
];

function match(table: [RegExp, (m: RegExpExecArray) => string][], path: string): string | undefined {
  for (const [pattern, to] of table) {
    const m = pattern.exec(path);
    // a dot segment would move the forwarded path up to another account API route
    if (m && !m.slice(1).some((seg) => /^(\.|%2e){1,2}$/i.test(seg))) return to(m);
  }
  return undefined;
}

/** Forwards one `/svc/saas/…` request of `tenant`; false when the path is not a SaaS endpoint. */
export async function forwardSaas(
  opts: SaasForwarding | undefined,
  tenant: string,
  path: string,
  req: IncomingMessage,
  body: Buffer,
  res: ServerResponse,
): Promise<boolean> {
  const method = req.method ?? 'GET';
  const read = method === 'GET' ? match(READS, path) : undefined;
  const callback = method === 'POST' ? match(CALLBACKS, path) : undefined;
  const target = read ?? callback;
  if (!target) {
    const known = match(READS, path) ?? match(CALLBACKS, path);
    if (!known) return false;
    res
      .writeHead(405, { 'content-type': 'application/json', allow: match(READS, path) ? 'GET' : 'POST' })
      .end(JSON.stringify({ error: 'method not allowed' }));
    return true;
  }
  if (!opts) {
    res
      .writeHead(503, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: 'the SaaS endpoints are not configured on this ERP entry' }));
    return true;
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  const given = req.headers['x-api-key'];
  if (typeof given === 'string' && given !== '') headers['x-api-key'] = given;
  else if (read && (await opts.loggedIn(req))) headers['x-api-key'] = await opts.key();
  else if (read) return (unauthorized(res), true);
  if (!read)
    headers['content-type'] =
      typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'application/json';
  const upstream = await fetch(new URL(`/api/saas/${encodeURIComponent(tenant)}/${target}`, opts.accountApiUrl), {
    method,
    headers,
    body: read ? undefined : new Uint8Array(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await upstream.text();
  res
    .writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' })
    .end(text);
  return true;
}
