/**
 * The tenant ERPs' SaaS endpoints (§4.7 `/svc/saas/…`): the tenant ingress (and the ERP stand-in,
 * which plays the ingress itself) forwards each request to the account API
 * (`/api/saas/<tenant>/…`, api/routes/saas/index.ts), so every tenant answers from the platform's
 * own tier and subscription data; no data is copied into the ERP.
 *
 * The reads go with the ERP entry's own service key (erp → account-api); the legacy callbacks carry
 * their caller's `X-API-Key` through unchanged (saas-jobs → account-api): the platform checks who
 * reports, the ERP entry holds no key that could vouch for it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface SaasForwarding {
  accountApiUrl: string;
  /** The ERP entry's current key for the account API (erp → account-api). */
  key: () => Promise<string>;
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
export async function forwardSaas(opts: SaasForwarding | undefined, tenant: string, path: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<boolean> {
  const method = req.method ?? 'GET';
  const read = method === 'GET' ? match(READS, path) : undefined;
  const callback = method === 'POST' ? match(CALLBACKS, path) : undefined;
  const target = read ?? callback;
  if (!target) {
    const known = match(READS, path) ?? match(CALLBACKS, path);
    if (!known) return false;
    res.writeHead(405, { 'content-type': 'application/json', allow: match(READS, path) ? 'GET' : 'POST' }).end(JSON.stringify({ error: 'method not allowed' }));
    return true;
  }
  if (!opts) {
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the SaaS endpoints are not configured on this ERP entry' }));
    return true;
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  if (read) headers['x-api-key'] = await opts.key();
  else {
    const given = req.headers['x-api-key'];
    if (typeof given === 'string') headers['x-api-key'] = given;
    headers['content-type'] = typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'application/json';
  }
  const upstream = await fetch(new URL(`/api/saas/${encodeURIComponent(tenant)}/${target}`, opts.accountApiUrl), {
    method,
    headers,
    body: read ? undefined : new Uint8Array(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await upstream.text();
  res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(text);
  return true;
}
