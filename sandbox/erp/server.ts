/**
 * The stand-in for the tenant ERPs (Odoo), one HTTP server for every tenant: the `Host` header
 * picks the tenant through the platform's `tenant_routes` table (host → database, namespace
 * `plana-odoo-<version>`); each tenant's data lives in its own PostgreSQL database. It speaks
 * Odoo's XML-RPC (`/xmlrpc/2/common`, `/xmlrpc/2/object`, faults 1–4, `false` for empty values),
 * Odoo's web session over JSON-RPC (`/web/session/authenticate`, `/web/dataset/call_kw`), answers
 * the health probe and shows a login page. A host without a route gets 404 on every path.
 *
 * API keys (sandbox/erp/apikeys.ts) are made in a web session as Odoo makes them and are accepted
 * in XML-RPC's password slot (17+, after the password, as Odoo's `_check_credentials`). Version 19
 * also serves JSON-2 (`POST /json/2/<model>/<method>`, `Authorization: bearer <key>`, named
 * parameters; errors as HTTP 401/403/404/422/500 with {name, message, arguments, context, debug});
 * on 17 and 18 that path is 404, as on real Odoo 18.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createPool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { verifyOdooPassword } from '../../domain/erp/odoo-password.js';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { erpVersionOfNamespace, type ErpVersion } from '../../domain/tenants/types.js';
import { routeOfHost } from '../../domain/tenants/http-routes.js';
import { parseMethodCall, serializeFault, serializeMethodResponse } from '../../domain/erp/xmlrpc-wire.js';
import { executeKw, modelsFor, type OrmContext } from './orm.js';
import { OdooError, accessDenied, accessError, attributeError } from './odoo-errors.js';
import { apiKeyWizards, checkApiKey } from './apikeys.js';
import { erpSessionId, forwardSaas, type SaasForwarding } from '../../services/tenant-ingress/saas.js';
import { PgSecretStore, serviceKeyFor } from '../../domain/service-keys/secret-store.js';
import { loadNone, matching, postWebhook, pythonJson, webhookRules } from './automation.js';
import { ACCESS } from './security.js';

interface Route {
  host: string;
  tenant: string;
  database: string;
  version: ErpVersion;
}

const ROUTE_TTL_MS = 1_000;
const AUTH_TTL_MS = 10_000;
/** Odoo's web sessions last a week without use. */
const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
const MAX_BODY = 10 * 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The tenant host a request is for (its Host without the port). */
const hostOf = (req: IncomingMessage) => (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();

export interface ErpStandIn {
  url: string;
  /** How many requests each path family got for `host` (`/xmlrpc/2/object`, `/json/2`, `/web/dataset/call_kw`, …) since the start. */
  requests(host: string): Record<string, number>;
  close(): Promise<void>;
}

export async function startErpStandIn(opts: {
  host: string;
  port: number;
  platformDatabaseUrl: string;
  erpDatabaseUrl: string;
  logger?: Logger;
  /**
   * Where `/svc/saas/…` goes (the tenant ingress's forwarding, services/tenant-ingress/saas.ts): the account API, with the key `key` gives, or
   * else the current erp → account-api key from the platform's secret store (`secretsKey`).
   * Unset, those endpoints answer 503.
   */
  saas?: { accountApiUrl: string; key?: () => Promise<string>; secretsKey?: string };
}): Promise<ErpStandIn> {
  const log = opts.logger ?? createLogger({ name: 'erp-stand-in' });
  const platform = createPool(opts.platformDatabaseUrl, 4);
  const routes = new Map<string, { route: Route | null; at: number }>();
  const tenantPools = new Map<string, pg.Pool>();
  const verified = new Map<string, { ok: Promise<boolean>; until: number }>();
  const sessions = new Map<string, { database: string; uid: number; token: string; until: number }>();
  const wizards = apiKeyWizards();
  const seen = new Map<string, Record<string, number>>();
  const saas: SaasForwarding | undefined = opts.saas && {
    accountApiUrl: opts.saas.accountApiUrl,
    key: opts.saas.key ?? serviceKeyFor(new PgSecretStore(platform, opts.saas.secretsKey ?? '', 5_000), 'erp', 'account-api'),
    loggedIn: async (req) => {
      const route = await routeFor(hostOf(req));
      return route !== null && (await liveSession(route, req)) !== undefined;
    },
  };

  async function routeFor(host: string): Promise<Route | null> {
    const cached = routes.get(host);
    if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route;
    const row = await routeOfHost(platform, host);
    const route = row ? { host, tenant: row.tenant, database: row.database, version: erpVersionOfNamespace(row.namespace) } : null;
    routes.set(host, { route, at: Date.now() });
    return route;
  }

  function poolFor(database: string): pg.Pool {
    let pool = tenantPools.get(database);
    if (!pool) {
      // short idle timeout: idle connections to a tenant database must not linger (drops, dumps)
      pool = new pg.Pool({ connectionString: databaseUrl(opts.erpDatabaseUrl, database), max: 4, idleTimeoutMillis: 2_000 });
      pool.on('error', () => {});
      tenantPools.set(database, pool);
    }
    return pool;
  }

  async function forgetPool(database: string) {
    const pool = tenantPools.get(database);
    tenantPools.delete(database);
    await pool?.end().catch(() => {});
  }

  /** Runs `fn` on the tenant database; a missing database becomes Odoo's OperationalError. */
  async function onTenantDb<T>(route: Route, fn: (db: pg.Pool) => Promise<T>): Promise<T> {
    try {
      return await fn(poolFor(route.database));
    } catch (err) {
      if ((err as { code?: string }).code === '3D000') {
        await forgetPool(route.database);
        throw new OdooError(1, `connection to server failed: FATAL:  database "${route.database}" does not exist`, 'psycopg2.OperationalError');
      }
      throw err;
    }
  }

  async function authenticate(route: Route, login: unknown, password: unknown): Promise<number | false> {
    // as Odoo: the database is opened first (a missing one is a fault whatever the credentials)
    const res = await onTenantDb(route, (db) =>
      db.query<{ id: number; password: string | null }>('SELECT id, password FROM res_users WHERE login = $1 AND active AND NOT share', [String(login)]),
    );
    if (typeof login !== 'string' || typeof password !== 'string' || !password) return false;
    const user = res.rows[0];
    if (!user) return false;
    if (await verifyOdooPassword(password, user.password)) return user.id;
    // non-interactive (RPC) logins also take one of the user's API keys in the password slot
    return (await onTenantDb(route, (db) => checkApiKey(db, password))) === user.id ? user.id : false;
  }

  /** Odoo's `check(db, uid, password)`, with a short cache of successful checks as Odoo keeps. */
  async function checkUser(route: Route, uid: unknown, password: unknown): Promise<{ uid: number; groups: Set<string>; companyIds: number[] }> {
    if (typeof uid !== 'number' || typeof password !== 'string' || !password) throw accessDenied();
    const key = createHash('sha256').update(`${route.database}\0${uid}\0${password}`).digest('base64');
    return onTenantDb(route, async (db) => {
      let check = verified.get(key);
      if (!check || check.until < Date.now()) {
        // concurrent calls of one user share one password check
        const ok = db
          .query<{ password: string | null }>('SELECT password FROM res_users WHERE id = $1 AND active AND NOT share', [uid])
          .then(async (res) => Boolean(res.rows[0]) && ((await verifyOdooPassword(password, res.rows[0]!.password)) || (await checkApiKey(db, password)) === uid));
        check = { ok, until: Date.now() + AUTH_TTL_MS };
        verified.set(key, check);
        ok.then((good) => good || verified.delete(key), () => verified.delete(key));
      }
      if (!(await check.ok)) throw accessDenied();
      return rightsOf(db, uid);
    });
  }

  /** The user's groups with every group they imply, by external id; its allowed companies. */
  async function rightsOf(db: pg.Pool, uid: number): Promise<{ uid: number; groups: Set<string>; companyIds: number[] }> {
    const rights = await db.query<{ active: boolean; groups: string[]; companies: number[] }>(
      `WITH RECURSIVE g(id) AS (
         SELECT gid FROM res_groups_users_rel WHERE uid = $1
         UNION SELECT i.hid FROM res_groups_implied_rel i JOIN g ON i.gid = g.id)
       SELECT u.active,
              ARRAY(SELECT d.module || '.' || d.name FROM ir_model_data d JOIN g ON d.res_id = g.id WHERE d.model = 'res.groups') AS groups,
              ARRAY(SELECT cid FROM res_company_users_rel WHERE user_id = u.id ORDER BY cid = u.company_id DESC, cid) AS companies
         FROM res_users u WHERE u.id = $1`,
      [uid],
    );
    const row = rights.rows[0];
    if (!row?.active) throw accessDenied(); // deactivated since the check
    return { uid, groups: new Set(row.groups), companyIds: row.companies };
  }

  function checkDb(route: Route, db: unknown) {
    if (db !== route.database) throw accessDenied();
  }

  async function common(route: Route, method: string, params: unknown[]): Promise<unknown> {
    switch (method) {
      case 'version':
        return {
          server_version: `${route.version}.0`,
          server_version_info: [Number(route.version), 0, 0, 'final', 0, ''],
          server_serie: `${route.version}.0`,
          protocol_version: 1,
        };
      case 'authenticate':
      case 'login': {
        const [db, login, password] = params;
        checkDb(route, db);
        return authenticate(route, login, password);
      }
      default:
        throw new OdooError(1, `Method not available ${method}`, 'NameError');
    }
  }

  async function object(route: Route, method: string, params: unknown[]): Promise<unknown> {
    if (method !== 'execute_kw' && method !== 'execute') throw new OdooError(1, `Method not available ${method}`, 'NameError');
    const [db, uid, password, model, modelMethod, ...rest] = params;
    checkDb(route, db);
    const user = await checkUser(route, uid, password);
    if (typeof model !== 'string' || typeof modelMethod !== 'string') throw new OdooError(1, 'execute_kw() model and method must be strings', 'TypeError');
    const args = method === 'execute_kw' ? (rest[0] ?? []) : rest;
    const kwargs = method === 'execute_kw' ? (rest[1] ?? {}) : {};
    if (!Array.isArray(args)) throw new OdooError(1, 'args must be a list', 'TypeError');
    if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs)) throw new OdooError(1, 'kwargs must be a dict', 'TypeError');
    return call(route, user, model, modelMethod, args, kwargs as Record<string, unknown>);
  }

  /**
   * One ORM call as `user`. A create or write on a model with automation rules runs them as Odoo
   * does (automation.ts): pre-domain before, domain after, a webhook post per matching record,
   * before the call answers.
   */
  function call(route: Route, user: { uid: number; groups: Set<string>; companyIds: number[] }, model: string, method: string, args: unknown[], kwargs: Record<string, unknown>) {
    return onTenantDb(route, async (pool) => {
      const ctx: OrmContext = { db: pool, version: route.version, uid: user.uid, groups: user.groups, companyIds: user.companyIds };
      const models = modelsFor(route.version);
      const def = models[model];
      const warn = (msg: string) => log.warn({ tenant: route.tenant, model }, msg);
      const writes = method === 'write' || method === 'action_post';
      const rules = def && (method === 'create' || writes) ? await webhookRules(pool, model, warn) : [];
      if (!def || rules.length === 0) return executeKw(ctx, model, method, args, kwargs);

      const written = writes ? [args[0] ?? kwargs.ids].flat().filter((id): id is number => typeof id === 'number') : [];
      const before = new Map<number, number[]>();
      for (const rule of rules) before.set(rule.actionId, await matching(pool, models, def, written, rule.preDomain));
      const result = await executeKw(ctx, model, method, args, kwargs);
      const created = method === 'create' ? [result].flat().filter((id): id is number => typeof id === 'number') : [];
      // the action reads the record as the superuser (the rule runs sudo)
      const companies = (await pool.query<{ id: number }>('SELECT id FROM res_company')).rows.map((r) => r.id);
      const superuser: OrmContext = { ...ctx, uid: 1, groups: new Set(Object.keys(ACCESS)), companyIds: companies };
      for (const rule of rules) {
        for (const id of await matching(pool, models, def, method === 'create' ? created : before.get(rule.actionId)!, rule.domain)) {
          const [row] = rule.fields.length ? ((await executeKw(superuser, model, 'read', [[id], rule.fields], {})) as Record<string, unknown>[]) : [{}];
          const body = pythonJson({ ...loadNone(def, row ?? {}), _model: model, _id: id, _action: `${rule.actionName}(#${rule.actionId})` });
          await postWebhook(rule.url, body, warn);
        }
      }
      return result;
    });
  }

  /**
   * Odoo's web session over JSON-RPC (`/web/session/authenticate`, then `/web/dataset/call_kw`
   * with the `session_id` cookie): the password is checked at login only. As in Odoo, the session
   * is bound to the password hash it was opened with (its session token): a password change, or a
   * deactivated user, ends it with the session-expired error. Every answer is HTTP 200; errors are
   * JSON-RPC errors whose `data.name` is the Python exception.
   */
  async function jsonrpc(route: Route, path: string, req: IncomingMessage, res: ServerResponse) {
    let id: unknown = null;
    try {
      let body: { id?: unknown; params?: Record<string, unknown> };
      try {
        body = JSON.parse((await readBody(req)).toString('utf8')) as typeof body;
      } catch (err) {
        if (err instanceof HttpError) throw err;
        throw new OdooError(1, 'Invalid JSON data', 'werkzeug.exceptions.BadRequest');
      }
      id = body.id ?? null;
      const params = body.params ?? {};
      if (path === '/web/session/authenticate') {
        if (params.db !== route.database) throw accessError('Database not found.');
        const uid = await authenticate(route, params.login, params.password);
        if (uid === false) throw accessDenied();
        const token = await sessionToken(route, uid);
        const sid = randomBytes(30).toString('base64url');
        sessions.set(sid, { database: route.database, uid, token, until: Date.now() + SESSION_TTL_MS });
        res.setHeader('set-cookie', `session_id=${sid}; Expires=${new Date(Date.now() + SESSION_TTL_MS).toUTCString()}; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; Path=/`);
        return json(res, 200, { jsonrpc: '2.0', id, result: { uid, db: route.database, is_system: uid === 2, user_context: { lang: 'en_US', tz: 'Europe/Brussels', uid } } });
      }
      const session = await liveSession(route, req);
      if (!session) {
        return json(res, 200, {
          jsonrpc: '2.0',
          id: null,
          error: { code: 100, message: 'Odoo Session Expired', data: { name: 'odoo.http.SessionExpiredException', message: 'Session expired', arguments: ['Session expired'], context: {} } },
        });
      }
      if (path === '/web/session/get_session_info') {
        return json(res, 200, { jsonrpc: '2.0', id, result: { uid: session.uid, db: route.database, is_system: session.uid === 2, user_context: { lang: 'en_US', tz: 'Europe/Brussels', uid: session.uid } } });
      }
      const { model, method, args = [], kwargs = {} } = params as { model?: unknown; method?: unknown; args?: unknown; kwargs?: unknown };
      if (typeof model !== 'string' || typeof method !== 'string') throw new OdooError(1, "call_kw() missing required arguments: 'model' and 'method'", 'TypeError');
      if (!Array.isArray(args)) throw new OdooError(1, 'args must be a list', 'TypeError');
      if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs)) throw new OdooError(1, 'kwargs must be a dict', 'TypeError');
      const user = await onTenantDb(route, (db) => rightsOf(db, session.uid));
      const result = wizards.handles(model)
        ? await onTenantDb(route, async (db) => {
            const answer = await wizards.call(db, { database: route.database, ...user }, model, method, args, kwargs as Record<string, unknown>);
            if (answer === undefined) throw attributeError(`The method '${method}' does not exist on the model '${model}'`);
            return answer;
          })
        : await call(route, user, model, method, args, kwargs as Record<string, unknown>);
      return json(res, 200, { jsonrpc: '2.0', id, result: result ?? null });
    } catch (err) {
      if (err instanceof HttpError) throw err;
      const fault = toFault(err);
      if (fault.pythonType === 'Exception') log.error({ err }, 'json-rpc call failed');
      return json(res, 200, {
        jsonrpc: '2.0',
        id,
        error: { code: 200, message: 'Odoo Server Error', data: { name: fault.pythonType, message: fault.message, arguments: [fault.message], context: {}, debug: fault.faultString } },
      });
    }
  }

  /** The request's web session of this tenant's database, while it lasts (else forgotten). */
  async function liveSession(route: Route, req: IncomingMessage) {
    const sid = erpSessionId(req);
    const session = sid ? sessions.get(sid) : undefined;
    if (!session || session.database !== route.database || session.until < Date.now() || (await sessionToken(route, session.uid).catch(() => null)) !== session.token) {
      if (sid) sessions.delete(sid);
      return undefined;
    }
    return session;
  }

  /** What a session is bound to: the user's password hash and active flag (Odoo's session token). */
  async function sessionToken(route: Route, uid: number): Promise<string> {
    const res = await onTenantDb(route, (db) => db.query<{ password: string | null; active: boolean }>('SELECT password, active FROM res_users WHERE id = $1', [uid]));
    const row = res.rows[0];
    if (!row?.active) throw accessDenied();
    return createHash('sha256').update(`${uid}\0${row.password ?? ''}`).digest('base64');
  }

  /**
   * Odoo 19's JSON-2 API: `POST /json/2/<model>/<method>` with `Authorization: bearer <api key>`
   * and `X-Odoo-Database`; the body holds the method's named parameters, `ids` for a record method
   * and `context`. 200 with the JSON result; errors are HTTP statuses with Odoo's error object.
   */
  async function json2(route: Route, path: string, req: IncomingMessage, res: ServerResponse) {
    const fail = (status: number, name: string, message: string) =>
      json(res, status, { name, message, arguments: [message], context: {}, debug: `Traceback (most recent call last):\n${name}: ${message}\n` });
    const [, , , model, method, ...more] = path.split('/');
    if (!model || !method || more.length) return fail(404, 'werkzeug.exceptions.NotFound', 'The requested URL was not found on the server.');
    const database = req.headers['x-odoo-database'];
    if (database !== undefined && database !== route.database) return fail(404, 'werkzeug.exceptions.NotFound', 'The requested URL was not found on the server.');
    const bearer = /^bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    try {
      const uid = bearer ? await onTenantDb(route, (db) => checkApiKey(db, bearer)) : null;
      if (!uid) return fail(401, 'odoo.exceptions.AccessDenied', 'Access Denied');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as Record<string, unknown>;
        if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('not an object');
      } catch (err) {
        if (err instanceof HttpError) throw err;
        return fail(400, 'werkzeug.exceptions.BadRequest', 'Invalid JSON data');
      }
      const { ids, context: _context, ...named } = body;
      const user = await onTenantDb(route, (db) => rightsOf(db, uid));
      if (model === 'res.users' && method === 'context_get') return json(res, 200, { lang: 'en_US', tz: 'Europe/Brussels' });
      const args = ids === undefined ? [] : [ids];
      const result = await call(route, user, model, method, args, named);
      return json(res, 200, result ?? null);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      const fault = toFault(err);
      if (fault.pythonType === 'Exception') log.error({ err }, 'json-2 call failed');
      const unknown = /^Object \S+ doesn't exist$/.test(fault.message) || /^The method '.*' does not exist on the model/.test(fault.message);
      const status = unknown ? 404 : ({ 3: 401, 4: 403, 2: 422 } as Record<number, number>)[fault.faultCode] ?? (fault.pythonType === 'TypeError' ? 422 : 500);
      return fail(status, fault.pythonType, fault.message);
    }
  }

  async function xmlrpc(route: Route, service: 'common' | 'object', req: IncomingMessage, res: ServerResponse) {
    let reply: string;
    try {
      const { method, params } = await parseMethodCall(await readBody(req));
      const result = service === 'common' ? await common(route, method, params) : await object(route, method, params);
      reply = serializeMethodResponse(result === undefined || result === null ? false : result);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      const fault = toFault(err);
      if (fault.pythonType === 'Exception') log.error({ err }, 'xml-rpc call failed');
      reply = serializeFault(fault.faultCode, fault.faultString);
    }
    res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(reply);
  }

  /**
   * As real Odoo's /web/health: 200 {"status":"pass"} whenever the server runs, for any Host, without
   * opening the tenant's database (the platform's readiness probe authenticates on it to know).
   */
  function health(_route: Route, res: ServerResponse) {
    json(res, 200, { status: 'pass' });
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const host = hostOf(req);
    const path = (req.url ?? '/').split('?')[0]!;
    const route = host ? await routeFor(host) : null;
    if (!route) return text(res, 404, `404 Not Found: no tenant at ${host || '(no Host header)'}\n`);
    const method = req.method ?? 'GET';
    const family = path.startsWith('/json/2/') ? '/json/2' : path.startsWith('/web/dataset/call_kw') ? '/web/dataset/call_kw' : path;
    const counts = seen.get(host) ?? {};
    counts[family] = (counts[family] ?? 0) + 1;
    seen.set(host, counts);
    if (path.startsWith('/json/2/') && method === 'POST' && Number(route.version) >= 19) return json2(route, path, req, res);
    if (path === '/web/health' && method === 'GET') return health(route, res);
    if (path === '/xmlrpc/2/common' && method === 'POST') return xmlrpc(route, 'common', req, res);
    if (path === '/xmlrpc/2/object' && method === 'POST') return xmlrpc(route, 'object', req, res);
    if ((path === '/web/session/authenticate' || path === '/web/session/get_session_info' || path.startsWith('/web/dataset/call_kw')) && method === 'POST') return jsonrpc(route, path, req, res);
    if (path === '/web/login' && method === 'GET') return html(res, 200, loginPage(route));
    if (path.startsWith('/svc/saas/')) {
      const body = method === 'POST' ? await readBody(req) : Buffer.alloc(0);
      if (await forwardSaas(saas, route.tenant, path, req, body, res)) return;
    }
    return text(res, 404, '404 Not Found\n');
  }

  const server = createServer((req, res) => {
    const started = Date.now();
    handle(req, res)
      .catch((err: unknown) => {
        if (err instanceof HttpError) return text(res, err.status, `${err.message}\n`);
        log.error({ err }, 'request failed');
        if (res.headersSent) return;
        // the routes table cannot be read: the ERP entry is unavailable, not broken
        const code = String((err as { code?: unknown }).code ?? '');
        if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'].includes(code) || code.startsWith('57P')) return text(res, 503, '503 Service Unavailable\n');
        text(res, 500, '500 Internal Server Error\n');
      })
      .finally(() => log.debug({ method: req.method, url: req.url, host: req.headers.host, status: res.statusCode, ms: Date.now() - started }, 'request'));
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
      await Promise.all([...tenantPools.keys()].map(forgetPool));
      await platform.end();
    },
  };
}

/** Anything thrown while answering a call, as the fault Odoo would send (code 1 for non-Odoo errors). */
function toFault(err: unknown): OdooError {
  if (err instanceof OdooError) return err;
  const code = (err as { code?: unknown }).code;
  // PostgreSQL rejected a value (e.g. a malformed date in a domain): psycopg2 raises, Odoo answers fault 1
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return new OdooError(1, (err as Error).message, 'psycopg2.errors.DatabaseError');
  if (err instanceof Error && err.name !== 'TypeError' && /XML|Unexpected|Invalid|Not a method call|method name/i.test(err.message)) {
    return new OdooError(1, err.message, 'xml.parsers.expat.ExpatError');
  }
  return new OdooError(1, 'Internal error', 'Exception');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, '413 Request Entity Too Large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const text = (res: ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
const html = (res: ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(body);

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const loginPage = (route: Route) => `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Login | Odoo</title></head>
<body>
<form class="oe_login_form" role="form" method="post" action="/web/login">
  <input type="hidden" name="db" value="${escapeHtml(route.database)}">
  <label for="login">Email</label> <input type="text" name="login" id="login" required autofocus autocapitalize="off">
  <label for="password">Password</label> <input type="password" name="password" id="password" required autocomplete="current-password">
  <button type="submit">Log in</button>
</form>
<p>Odoo ${escapeHtml(route.version)}.0 · ${escapeHtml(route.host)}</p>
</body></html>
`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const { config } = await import('../../lib/config.js');
  const cfg = config();
  const erp = await startErpStandIn({
    host: cfg.ERP_HOST,
    port: cfg.ERP_PORT,
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    saas: { accountApiUrl: cfg.ACCOUNT_API_URL, secretsKey: cfg.SECRETS_KEY },
  });
  console.log(`ERP stand-in listening on ${erp.url}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void erp.close());
}
