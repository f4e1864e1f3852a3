/**
 * The stand-in for the tenant ERPs (Odoo), one HTTP server for every tenant: the `Host` header
 * picks the tenant through the platform's `tenant_routes` table (host → database, namespace
 * `plana-odoo-<version>`); each tenant's data lives in its own PostgreSQL database. It speaks
 * Odoo's XML-RPC (`/xmlrpc/2/common`, `/xmlrpc/2/object`, faults 1–4, `false` for empty values),
 * Odoo's web session over JSON-RPC (`/web/session/authenticate`, `/web/dataset/call_kw`), answers
 * the health probe (503 while the tenant database is being installed or missing), shows a login page
 * with its OAuth providers and signs people in through them (`/auth_oauth/signin`, oauth-signin.ts:
 * Odoo's auth_oauth with OCA's auth_oidc), then into the web client (`/web`, `/odoo`). A host without
 * a route gets 404 on every path. Playing the tenant ingress too (unless `behindIngress`), it leaves
 * out a session cookie of another tenant's database, which Odoo itself would log out.
 *
 * `/svc/saas/…` belongs to the tenant ingress, which is the platform's: when the stand-in plays the
 * ingress, whoever starts it passes the platform's forwarding in (`saas`); without it those paths
 * are 404, as on Odoo itself.
 *
 * API keys (sandbox/erp/apikeys.ts) are made in a web session as Odoo makes them and are accepted
 * in XML-RPC's password slot (17+, after the password, as Odoo's `_check_credentials`). Version 19
 * also serves JSON-2 (`POST /json/2/<model>/<method>`, `Authorization: bearer <key>`, named
 * parameters; errors as HTTP 401/403/404/422/500 with {name, message, arguments, context, debug});
 * on 17 and 18 that path is 404, as on real Odoo 18. Version 19 also says its version on
 * `GET /json/version` and `/web/version` (`{version_info, version}`, no login), which 17 and 18 have
 * not (404; they say it over XML-RPC).
 *
 * This file routes requests; each protocol area has its module: xmlrpc.ts, web-client.ts (login
 * page, web session, call_kw), json2.ts; tenant-databases.ts (Host → tenant database),
 * credentials.ts (logins, checks, sessions), automated-call.ts (an ORM call with its automation
 * rules), orm.ts (method dispatch) and its orm-*.ts concerns.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { apiKeyWizards } from './apikeys.js';
import { automatedOrmCall } from './automated-call.js';
import { Credentials, WebSessions } from './credentials.js';
import { HttpError, hostOf, html, json, readBody, text } from './http.js';
import { json2 } from './json2.js';
import type { ErpServices } from './services.js';
import { TenantDatabases, type Route } from './tenant-databases.js';
import { loginPage, webClient, webJsonRpc } from './web-client.js';
import { loginProviders, oauthSignin } from './oauth-signin.js';
import { xmlrpc } from './xmlrpc.js';

export interface ErpStandIn {
  url: string;
  /** How many requests each path family got for `host` (`/xmlrpc/2/object`, `/json/2`, `/web/dataset/call_kw`, …) since the start. */
  requests(host: string): Record<string, number>;
  close(): Promise<void>;
}

export interface ErpStandInOptions {
  host: string;
  port: number;
  platformDatabaseUrl: string;
  erpDatabaseUrl: string;
  logger?: Logger;
  /**
   * The tenant ingress's `/svc/saas/…` endpoints, when the stand-in plays the ingress: the platform's
   * forwarding, passed in by the composition root (scripts/, test/). Unset, those paths are 404.
   */
  saas?: SaasEndpoints;
  /**
   * True when the tenant ingress stands in front (as in front of real Odoo): the stand-in then plays
   * Odoo alone, which logs out a session sent to another tenant's host. Unset, it plays the ingress
   * too, which leaves such a session out of the request (WebSessions.ignoreForeign).
   */
  behindIngress?: boolean;
}

/**
 * Answers one `/svc/saas/…` request of `tenant` (the body already read); false when `path` is not
 * one of its endpoints. `loggedIn` says whether the request carries a live web session of the
 * tenant's ERP, as the ingress asks Odoo.
 */
export type SaasEndpoints = (request: {
  tenant: string;
  path: string;
  req: IncomingMessage;
  body: Buffer;
  res: ServerResponse;
  loggedIn: () => Promise<boolean>;
}) => Promise<boolean>;

export async function startErpStandIn(opts: ErpStandInOptions): Promise<ErpStandIn> {
  const log = opts.logger ?? pino({ name: 'erp-stand-in' });
  const platform = new pg.Pool({ connectionString: opts.platformDatabaseUrl, max: 4, idleTimeoutMillis: 30_000 });
  platform.on('error', () => {});
  const tenants = new TenantDatabases(platform, opts.erpDatabaseUrl);
  const erp: ErpServices = {
    log,
    tenants,
    credentials: new Credentials(tenants),
    sessions: new WebSessions(tenants),
    wizards: apiKeyWizards(),
    call: automatedOrmCall(tenants, log),
  };
  const seen = new Map<string, Record<string, number>>();
  const count = (host: string, path: string) => {
    const family = path.startsWith('/json/2/')
      ? '/json/2'
      : path.startsWith('/web/dataset/call_kw')
        ? '/web/dataset/call_kw'
        : path;
    const counts = seen.get(host) ?? {};
    counts[family] = (counts[family] ?? 0) + 1;
    seen.set(host, counts);
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const host = hostOf(req);
    const path = (req.url ?? '/').split('?')[0]!;
    const route = host ? await tenants.routeFor(host) : null;
    if (!route) return text(res, 404, `404 Not Found: no tenant at ${host || '(no Host header)'}\n`);
    if (!opts.behindIngress) erp.sessions.ignoreForeign(route, req);
    count(host, path);
    return routeRequest(erp, opts.saas, tenants, route, path, req, res);
  }

  const server = createServer((req, res) => {
    const started = Date.now();
    handle(req, res)
      .catch((err: unknown) => answerFailure(log, res, err))
      .finally(() =>
        log.debug(
          {
            method: req.method,
            url: req.url,
            host: req.headers.host,
            status: res.statusCode,
            ms: Date.now() - started,
          },
          'request',
        ),
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host}:${port}`,
    requests: (host) => ({ ...seen.get(host) }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await tenants.close();
      await platform.end();
    },
  };
}

/**
 * /web/health as the tenant's route answers it: 503 while its database is being installed from
 * scratch or is missing (§7: the route is up, no ERP worker serves it), else real Odoo's answer,
 * which passes whenever the server runs, without opening the tenant's database.
 */
async function health(tenants: TenantDatabases, route: Route, res: ServerResponse) {
  const unserved = await tenants.unservedReason(route);
  if (unserved) return json(res, 503, { status: 'fail', reason: unserved });
  return json(res, 200, { status: 'pass' });
}

/** One tenant's request, by path and method, to the module that speaks its protocol. */
async function routeRequest(
  erp: ErpServices,
  saas: SaasEndpoints | undefined,
  tenants: TenantDatabases,
  route: Route,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const method = req.method ?? 'GET';
  if (path.startsWith('/json/2/') && method === 'POST' && Number(route.version) >= 19)
    return json2(erp, route, path, req, res);
  if ((path === '/json/version' || path === '/web/version') && method === 'GET' && Number(route.version) >= 19)
    return json(res, 200, {
      version_info: [Number(route.version), 0, 0, 'final', 0, ''],
      version: `${route.version}.0`,
    });
  if (path === '/web/health' && method === 'GET') return health(tenants, route, res);
  if (path === '/xmlrpc/2/common' && method === 'POST') return xmlrpc(erp, route, 'common', req, res);
  if (path === '/xmlrpc/2/object' && method === 'POST') return xmlrpc(erp, route, 'object', req, res);
  if (
    (path === '/web/session/authenticate' ||
      path === '/web/session/get_session_info' ||
      path.startsWith('/web/dataset/call_kw')) &&
    method === 'POST'
  )
    return webJsonRpc(erp, route, path, req, res);
  if (path === '/web/login' && method === 'GET') return webLogin(erp, route, req, res);
  if (path === '/auth_oauth/signin') return oauthSignin(erp, route, req, res);
  if ((path === '/web' || path === '/odoo' || path.startsWith('/odoo/')) && method === 'GET')
    return webClient(erp, route, req, res);
  if (path.startsWith('/svc/saas/') && saas) {
    const body = method === 'POST' ? await readBody(req) : Buffer.alloc(0);
    const loggedIn = async () => (await erp.sessions.live(route, req)) !== undefined;
    if (await saas({ tenant: route.tenant, path, req, body, res, loggedIn })) return;
  }
  return text(res, 404, '404 Not Found\n');
}

/** `GET /web/login`: signed in with a `redirect`, there (303); else the login page with the providers' links. */
async function webLogin(erp: ErpServices, route: Route, req: IncomingMessage, res: ServerResponse) {
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  const redirect = query.get('redirect');
  if (redirect && (await erp.sessions.live(route, req))) return res.writeHead(303, { location: redirect }).end();
  const providers = await loginProviders(erp, route, req, redirect);
  return html(res, 200, loginPage(route, providers, query.get('oauth_error')));
}

/** A request that failed outside Odoo's own error answers: its HTTP refusal, 503 or 500. */
function answerFailure(log: Logger, res: ServerResponse, err: unknown) {
  if (err instanceof HttpError) return text(res, err.status, `${err.message}\n`);
  log.error({ err }, 'request failed');
  if (res.headersSent) return;
  // the routes table cannot be read: the ERP entry is unavailable, not broken
  const code = String((err as { code?: unknown }).code ?? '');
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'].includes(code) || code.startsWith('57P'))
    return text(res, 503, '503 Service Unavailable\n');
  text(res, 500, '500 Internal Server Error\n');
}
