/**
 * Odoo's sign-in through an OAuth provider, as Odoo 18's `auth_oauth` with OCA's `auth_oidc`
 * (odoo-addon-auth-oidc 18.0.1.1.0) does it, read from their code:
 *
 * - the login page links each enabled `auth.oauth.provider` (`list_providers`): Community's flow
 *   `access_token` asks `response_type=token`; auth_oidc's `id_token_code` asks `response_type=code`
 *   with a nonce and a PKCE challenge of the provider's fixed `code_verifier`. The `state` is JSON
 *   `{"d": database, "p": provider id, "r": url-quoted redirect}` (default `{url_root}web`); Odoo
 *   binds neither the state nor the nonce to the browser (nothing is checked against them but the
 *   database name);
 * - `/auth_oauth/signin`: without parameters, a page moving the URL's fragment into its query; a
 *   POST fails Odoo's CSRF check (400); a state that is not JSON is a 500, one for another database
 *   a 400; then the code is exchanged at the token endpoint (HTTP Basic, `client_id`, `code`,
 *   `code_verifier`, `redirect_uri` = `{url_root}auth_oauth/signin`), the ID token checked (RS256
 *   with the JWKS key of its `kid`, audience = client id, `at_hash`), the user found by
 *   (`oauth_uid` = `sub`, `oauth_provider_id`) among active users, the access token stored, a
 *   session opened and the browser sent (303) to the state's redirect. No such user: sign-up, which
 *   is refused for uninvited users (b2b): `/web/login?oauth_error=3`; any other failure (provider
 *   down, bad code, bad token): `/web/login?oauth_error=2`.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { AUTH_OIDC_MODULE } from './odoo-series.js';
import { html, text } from './http.js';
import { signUpUninvited } from './oauth-signup.js';
import type { ErpServices } from './services.js';
import type { Route } from './tenant-databases.js';
import { sessionCookie, type LoginProvider } from './web-client.js';

interface ProviderRow {
  id: number;
  name: string;
  client_id: string | null;
  client_secret: string | null;
  auth_endpoint: string;
  scope: string | null;
  flow: string | null;
  token_endpoint: string | null;
  jwks_uri: string | null;
  code_verifier: string | null;
  css_class: string | null;
  body: string;
}

/** Odoo's `request.httprequest.url_root`: scheme (X-Forwarded-Proto behind a proxy) and Host. */
export const urlRoot = (req: IncomingMessage) =>
  `${String(req.headers['x-forwarded-proto'] ?? 'http')
    .split(',')[0]!
    .trim()}://${req.headers.host}/`;

/** werkzeug's url_quote_plus. */
const quotePlus = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
const unquotePlus = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));

const challengeOf = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** The database has the sign-in module installed (without it Odoo has neither the providers nor their routes). */
const MODULE_INSTALLED = `EXISTS (SELECT 1 FROM ir_module_module WHERE name = $1 AND state = 'installed')`;

/** The enabled providers with their links (`list_providers`; none when the model is not installed). */
export async function loginProviders(
  erp: ErpServices,
  route: Route,
  req: IncomingMessage,
  redirect: string | null,
): Promise<LoginProvider[]> {
  const rows = await erp.tenants
    .onTenantDb(route, (db) =>
      db.query<ProviderRow>(
        `SELECT * FROM auth_oauth_provider WHERE enabled AND ${MODULE_INSTALLED} ORDER BY sequence, name`,
        [AUTH_OIDC_MODULE],
      ),
    )
    .then((r) => r.rows)
    .catch(() => [] as ProviderRow[]);
  const root = urlRoot(req);
  let target = redirect || 'web';
  if (!/^(\/\/|https?:\/\/)/.test(target)) target = `${root}${target.startsWith('/') ? target.slice(1) : target}`;
  return rows.map((p) => {
    const params = new URLSearchParams({
      response_type: 'token',
      client_id: p.client_id ?? '',
      redirect_uri: `${root}auth_oauth/signin`,
      scope: p.scope ?? '',
      state: JSON.stringify({ d: route.database, p: p.id, r: quotePlus(target) }),
    });
    if (p.flow === 'id_token_code' || p.flow === 'id_token') {
      params.set('nonce', randomBytes(32).toString('base64url'));
      params.set('response_type', p.flow === 'id_token' ? 'id_token token' : 'code');
      params.set('code_challenge', challengeOf(p.code_verifier ?? ''));
      params.set('code_challenge_method', 'S256');
    }
    return { body: p.body, cssClass: p.css_class ?? '', authLink: `${p.auth_endpoint}?${params}` };
  });
}

/** Odoo's `fragment_to_query_string` page: the provider's answer in the fragment, moved to the query. */
const FRAGMENT_PAGE = `<html><head><script>
    var l = window.location;
    var q = l.hash.substring(1);
    var r = l.pathname + l.search;
    if(q.length !== 0) {
        var s = l.search ? (l.search === '?' ? '' : '&') : '?';
        r = l.pathname + l.search + s + q;
    }
    if (r == l.pathname) {
        r = '/';
    }
    window.location = r;
</script></head><body></body></html>`;

class AccessDenied extends Error {}

/** `GET /auth_oauth/signin` (any other method fails Odoo's CSRF check); 404 without the module, as Odoo's routing. */
export async function oauthSignin(erp: ErpServices, route: Route, req: IncomingMessage, res: ServerResponse) {
  const installed = await erp.tenants.onTenantDb(route, (db) =>
    db.query(`SELECT ${MODULE_INSTALLED}`, [AUTH_OIDC_MODULE]).then((r) => Object.values(r.rows[0])[0] === true),
  );
  if (!installed) return text(res, 404, '404 Not Found\n');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return text(res, 400, '400 Bad Request: Session expired (invalid CSRF token)\n');
  const params = Object.fromEntries(new URL(req.url ?? '/', 'http://x').searchParams);
  delete params.debug;
  if (Object.keys(params).length === 0) return html(res, 200, FRAGMENT_PAGE);
  let state: { d?: unknown; p?: unknown; r?: unknown };
  try {
    state = JSON.parse(params.state ?? '');
  } catch {
    return text(res, 500, '500 Internal Server Error\n');
  }
  if (state.d !== route.database) return text(res, 400, '400 Bad Request\n');
  try {
    const uid = await signedInUser(erp, route, req, Number(state.p), params);
    const sid = await erp.sessions.open(route, uid);
    const target = typeof state.r === 'string' && state.r ? unquotePlus(state.r) : '/odoo';
    return res.writeHead(303, { location: target, 'set-cookie': sessionCookie(sid) }).end();
  } catch (err) {
    const error = err instanceof AccessDenied ? 3 : 2;
    erp.log.warn({ tenant: route.tenant, error: (err as Error).message }, 'oauth sign-in refused');
    return res.writeHead(303, { location: `/web/login?oauth_error=${error}` }).end();
  }
}

/** The user the provider's answer signs in as (auth_oidc's `auth_oauth`); AccessDenied without one. */
async function signedInUser(
  erp: ErpServices,
  route: Route,
  req: IncomingMessage,
  providerId: number,
  params: Record<string, string>,
): Promise<number> {
  const provider = await erp.tenants.onTenantDb(route, async (db) => {
    const { rows } = await db.query<ProviderRow>('SELECT * FROM auth_oauth_provider WHERE id = $1', [providerId]);
    return rows[0];
  });
  if (!provider) throw new Error(`Record does not exist or has been deleted. (auth.oauth.provider(${providerId},))`);
  if (provider.flow !== 'id_token_code') throw new Error(`flow ${provider.flow} is not served by the stand-in`);
  const tokens = await exchangeCode(provider, params.code ?? '', `${urlRoot(req)}auth_oauth/signin`);
  if (!tokens.access_token || !tokens.id_token) throw new AccessDenied('no access_token or id_token');
  const claims = await verifyIdToken(provider, tokens.id_token, tokens.access_token);
  return erp.tenants.onTenantDb(route, async (db) => {
    const { rows } = await db.query<{ id: number }>(
      'SELECT id FROM res_users WHERE oauth_uid = $1 AND oauth_provider_id = $2 AND active',
      [claims.sub, provider.id],
    );
    // no such user: auth_signup signs them up with the 'b2c' invitation scope, else refuses them
    if (!rows[0]) {
      const signedUp = await signUpUninvited(db, provider.id, { ...claims, sub: claims.sub! }, tokens.access_token!);
      if (signedUp === undefined) throw new AccessDenied('Signup is not allowed for uninvited users');
      return signedUp;
    }
    await db.query('UPDATE res_users SET oauth_access_token = $2 WHERE id = $1', [rows[0].id, tokens.access_token]);
    return rows[0].id;
  });
}

/** The token request of auth_oidc (`requests.post(..., auth=(client_id, client_secret), timeout=10)`). */
async function exchangeCode(provider: ProviderRow, code: string, redirectUri: string) {
  const res = await fetch(provider.token_endpoint ?? '', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(provider.client_secret
        ? {
            authorization: `Basic ${Buffer.from(`${provider.client_id}:${provider.client_secret}`).toString('base64')}`,
          }
        : {}),
    },
    body: new URLSearchParams({
      client_id: provider.client_id ?? '',
      grant_type: 'authorization_code',
      code,
      code_verifier: provider.code_verifier ?? '',
      redirect_uri: redirectUri,
    }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`token endpoint answered ${res.status}`);
  return (await res.json()) as { access_token?: string; id_token?: string };
}

const jwksByUri = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

/** python-jose's `jwt.decode(id_token, key, algorithms=["RS256"], audience=client_id, access_token=…)`. */
async function verifyIdToken(provider: ProviderRow, idToken: string, accessToken: string): Promise<JWTPayload> {
  const uri = provider.jwks_uri ?? '';
  let jwks = jwksByUri.get(uri);
  if (!jwks) jwksByUri.set(uri, (jwks = createRemoteJWKSet(new URL(uri), { timeoutDuration: 10_000 })));
  const { payload } = await jwtVerify(idToken, jwks, { algorithms: ['RS256'], audience: provider.client_id ?? '' });
  if (payload.at_hash !== undefined) {
    const digest = createHash('sha256').update(accessToken).digest();
    if (payload.at_hash !== digest.subarray(0, 16).toString('base64url')) throw new Error('at_hash does not match');
  }
  if (!payload.sub) throw new AccessDenied('user_id claim not found in id_token');
  return payload;
}
