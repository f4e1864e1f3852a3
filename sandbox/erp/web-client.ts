/**
 * Odoo's web client endpoints: the login page, and the web session over JSON-RPC
 * (`/web/session/authenticate`, `/web/session/get_session_info`, then `/web/dataset/call_kw` with
 * the `session_id` cookie). The password is checked at login only; a session ends with Odoo's
 * session-expired error when its user's password changes or the user is deactivated
 * (credentials.ts). Every answer is HTTP 200; errors are JSON-RPC errors whose `data.name` is the
 * Python exception.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, html, json, readBody } from './http.js';
import { SESSION_TTL_MS } from './credentials.js';
import { OdooError, UnknownModelError, accessDenied, accessError, attributeError, toFault } from './odoo-errors.js';
import { checkArgs, type ErpServices } from './services.js';
import type { Route } from './tenant-databases.js';

type JsonRpcParams = Record<string, unknown>;

const SESSION_EXPIRED = {
  jsonrpc: '2.0',
  id: null,
  error: {
    code: 100,
    message: 'Odoo Session Expired',
    data: {
      name: 'odoo.http.SessionExpiredException',
      message: 'Session expired',
      arguments: ['Session expired'],
      context: {},
    },
  },
};

/** Odoo 17's `/web/dataset/call_kw` for a model its registry does not have: `request.env[model]`'s KeyError. */
const unknownModel17 = (model: unknown) => ({
  code: 200,
  message: 'Odoo Server Error',
  data: { name: 'builtins.KeyError', message: String(model), arguments: [String(model)], context: {} },
});

/** Odoo 18+'s `/web/dataset/call_kw` for a model its registry does not have (`_call_kw_readonly`: werkzeug's NotFound). */
const NOT_FOUND = {
  code: 404,
  message: '404: Not Found',
  data: {
    name: 'werkzeug.exceptions.NotFound',
    message:
      '404 Not Found: The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.',
    arguments: [],
    context: {},
  },
};

const sessionInfo = (route: Route, uid: number) => ({
  uid,
  db: route.database,
  is_system: uid === 2,
  user_context: { lang: 'en_US', tz: 'Europe/Brussels', uid },
});

export async function webJsonRpc(
  erp: ErpServices,
  route: Route,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  let id: unknown = null;
  let params: JsonRpcParams = {};
  try {
    const body = await jsonRpcBody(req);
    id = body.id ?? null;
    params = body.params ?? {};
    if (path === '/web/session/authenticate') return await authenticate(erp, route, id, params, res);
    const session = await erp.sessions.live(route, req);
    if (!session) return json(res, 200, SESSION_EXPIRED);
    if (path === '/web/session/get_session_info')
      return json(res, 200, { jsonrpc: '2.0', id, result: sessionInfo(route, session.uid) });
    const result = await callKw(erp, route, session.uid, params);
    return json(res, 200, { jsonrpc: '2.0', id, result: result ?? null });
  } catch (err) {
    if (err instanceof HttpError) throw err;
    if (err instanceof UnknownModelError)
      return json(res, 200, {
        jsonrpc: '2.0',
        id,
        // Odoo 17 has no readonly check before call_kw: the registry's KeyError comes out as a server error
        error: route.version === '17' ? unknownModel17(params.model) : NOT_FOUND,
      });
    const fault = toFault(err);
    if (fault.pythonType === 'Exception') erp.log.error({ err }, 'json-rpc call failed');
    return json(res, 200, {
      jsonrpc: '2.0',
      id,
      error: {
        code: 200,
        message: 'Odoo Server Error',
        data: {
          // Odoo's serialize_exception: `<module>.<name>`, so Python's own exceptions are `builtins.<name>`
          name: fault.pythonType.includes('.') ? fault.pythonType : `builtins.${fault.pythonType}`,
          message: fault.message,
          arguments: [fault.message],
          context: {},
          debug: fault.faultString,
        },
      },
    });
  }
}

async function jsonRpcBody(req: IncomingMessage): Promise<{ id?: unknown; params?: JsonRpcParams }> {
  try {
    return JSON.parse((await readBody(req)).toString('utf8')) as { id?: unknown; params?: JsonRpcParams };
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new OdooError(1, 'Invalid JSON data', 'werkzeug.exceptions.BadRequest');
  }
}

/** The `session_id` cookie of a new web session, as Odoo sets it. */
export const sessionCookie = (sid: string) =>
  `session_id=${sid}; Expires=${new Date(Date.now() + SESSION_TTL_MS).toUTCString()}; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; Path=/`;

/** `/web/session/authenticate`: a new session, its id in the `session_id` cookie. */
async function authenticate(erp: ErpServices, route: Route, id: unknown, params: JsonRpcParams, res: ServerResponse) {
  if (params.db !== route.database) throw accessError('Database not found.');
  const uid = await erp.credentials.authenticate(route, params.login, params.password);
  if (uid === false) throw accessDenied();
  const sid = await erp.sessions.open(route, uid);
  res.setHeader('set-cookie', sessionCookie(sid));
  return json(res, 200, { jsonrpc: '2.0', id, result: sessionInfo(route, uid) });
}

/** `/web/dataset/call_kw`: an ORM call (or an API key wizard's) as the session's user. */
async function callKw(erp: ErpServices, route: Route, uid: number, params: JsonRpcParams): Promise<unknown> {
  const { model, method, args = [], kwargs = {} } = params;
  if (typeof model !== 'string' || typeof method !== 'string')
    throw new OdooError(1, "call_kw() missing required arguments: 'model' and 'method'", 'TypeError');
  checkArgs(args, kwargs);
  const user = await erp.credentials.rights(route, uid);
  if (!erp.wizards.handles(model)) return erp.call(route, user, model, method, args as unknown[], kwargs);
  return erp.tenants.onTenantDb(route, async (db) => {
    const answer = await erp.wizards.call(
      db,
      { database: route.database, version: route.version, ...user },
      model,
      method,
      args as unknown[],
      kwargs,
    );
    if (answer === undefined) throw attributeError(`The method '${method}' does not exist on the model '${model}'`);
    return answer;
  });
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** auth_oauth's messages for `/web/login?oauth_error=…`. */
const OAUTH_ERRORS: Record<string, string> = {
  '1': 'Sign up is not allowed on this database.',
  '2': 'Access Denied',
  '3': 'You do not have access to this database or your invitation has expired. Please ask for an invitation and be sure to follow the link in your invitation email.',
};

/** `GET /web/login`: Odoo's login form for the tenant's database, its OAuth providers' links and auth_oauth's error. */
/** A "Sign in with …" link on the login page (Odoo's `list_providers`), made by oauth-signin.ts. */
export interface LoginProvider {
  body: string;
  cssClass: string;
  authLink: string;
}

export const loginPage = (route: Route, providers: LoginProvider[] = [], oauthError?: string | null) => {
  const error = oauthError ? OAUTH_ERRORS[oauthError] : undefined;
  const links = providers
    .map(
      (p) =>
        `  <a class="list-group-item" href="${escapeHtml(p.authLink)}"><i class="${escapeHtml(p.cssClass)}"></i> ${escapeHtml(p.body)}</a>\n`,
    )
    .join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Login | Odoo</title></head>
<body>
<form class="oe_login_form" role="form" method="post" action="/web/login">
  <input type="hidden" name="db" value="${escapeHtml(route.database)}">
  <label for="login">Email</label> <input type="text" name="login" id="login" required autofocus autocapitalize="off">
  <label for="password">Password</label> <input type="password" name="password" id="password" required autocomplete="current-password">
${error ? `  <p class="alert alert-danger" role="alert">${escapeHtml(error)}</p>\n` : ''}  <button type="submit">Log in</button>
</form>
${links ? `<div class="o_auth_oauth_providers list-group mt-1 mb-1 text-start">\n${links}</div>\n` : ''}<p>Odoo ${escapeHtml(route.version)}.0 · ${escapeHtml(route.host)}</p>
</body></html>
`;
};

/**
 * `GET /web`, `/odoo`, `/odoo/…` (Odoo's `web_client`): without a live session, 303 to
 * `/web/login?redirect=<full path>`; with one, the web client (here: a page naming the signed-in user).
 */
export async function webClient(erp: ErpServices, route: Route, req: IncomingMessage, res: ServerResponse) {
  const session = await erp.sessions.live(route, req);
  const url = new URL(req.url ?? '/', 'http://x');
  if (!session) {
    const fullPath = `${url.pathname}?${url.search.slice(1)}`;
    return res.writeHead(303, { location: `/web/login?${new URLSearchParams({ redirect: fullPath })}` }).end();
  }
  const redirect = url.searchParams.get('redirect');
  if (redirect) return res.writeHead(303, { location: redirect }).end();
  const { rows } = await erp.tenants.onTenantDb(route, (db) =>
    db.query<{ name: string; login: string }>(
      'SELECT p.name, u.login FROM res_users u JOIN res_partner p ON p.id = u.partner_id WHERE u.id = $1',
      [session.uid],
    ),
  );
  const user = rows[0] ?? { name: '', login: '' };
  return html(
    res,
    200,
    `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Odoo</title></head>
<body class="o_web_client">
<header class="o_main_navbar"><span class="o_user_menu" data-login="${escapeHtml(user.login)}">${escapeHtml(user.name)}</span></header>
<main class="o_action_manager"><p>Odoo ${escapeHtml(route.version)}.0 · ${escapeHtml(route.database)}</p></main>
</body></html>
`,
  );
}
