/**
 * A tenant's ERP signs in through the platform's OpenID provider: what the ERP needs, written as
 * its `admin` through Odoo's models. Odoo 18 Community's `auth_oauth` asks for `response_type=token`
 * (the implicit grant), which oidc-provider (certified, OAuth 2.0 Security BCP) refuses; OCA's
 * `auth_oidc` (odoo-addon-auth-oidc) extends the same `auth.oauth.provider` with the authorization
 * code flow and PKCE (`flow = id_token_code`, `token_endpoint`, `jwks_uri`, `client_secret`), and
 * keeps `/auth_oauth/signin` as the callback. So the ERP gets one provider of that flow.
 */
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { adminSession, erpMajorVersion, groupsField, type ErpApiUserDeps } from '../erp/admin-session.js';
import { groupIds } from '../erp/api-user.js';
import type { ErpSession } from '../erp/client.js';
import { installModules, MODULE_INSTALL_TIMEOUT_MS } from '../erp/modules.js';
import { ODOO_SIGN_IN_MODULE } from '../erp/odoo-bin.js';
import { ERP_SCOPE_REQUESTED, tenantClientId, type TenantOidcClient } from './oidc-clients.js';

/** The login button's label on the ERP's login page. */
export const ERP_PROVIDER_BUTTON = 'Sign in with Plana';

/** The `auth.oauth.provider` values for the platform's provider at `issuer`. */
export function erpProviderValues(issuer: string, client: TenantOidcClient) {
  return {
    name: 'Plana',
    body: ERP_PROVIDER_BUTTON,
    flow: 'id_token_code',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    auth_endpoint: `${issuer}/authorize/`,
    token_endpoint: `${issuer}/token/`,
    jwks_uri: `${issuer}/jwks/`,
    validation_endpoint: `${issuer}/userinfo/`,
    scope: ERP_SCOPE_REQUESTED,
    enabled: true,
  };
}

/**
 * The ERP's sign-in module installed (a database cloned from a template made before the module was
 * part of it has no `auth.oauth.provider`: Odoo answers 404 Not Found to every call on it). Answers
 * whether this call installed it; an ERP without the module in its addons path is an error naming it.
 */
export async function ensureErpSignInModule(deps: ErpApiUserDeps, database: string): Promise<boolean> {
  const { session } = await adminSession(deps, database, { timeoutMs: MODULE_INSTALL_TIMEOUT_MS });
  const { installed, unavailable } = await installModules(session, database, [ODOO_SIGN_IN_MODULE]);
  if (unavailable.length)
    throw new Error(
      `the ERP of ${database} does not have the sign-in module ${ODOO_SIGN_IN_MODULE} (not in its addons path)`,
    );
  return installed.length > 0;
}

/**
 * Odoo's sign-up scope (auth_signup, Settings › Customer Account): with 'b2c', auth_oauth makes a
 * new (portal) user for anyone the provider signs in who has no ERP user, which would let any
 * platform account into a tenant's ERP. auth_signup's install data sets 'b2c' (real Odoo 18: every
 * template has it) and an administrator may set it again; 'b2b' signs in only the users provisioning made.
 */
export const ERP_INVITATION_SCOPE = { key: 'auth_signup.invitation_scope', value: 'b2b' } as const;

/** Sets the ERP's sign-up scope to ERP_INVITATION_SCOPE; answers the value it replaced, if any. */
async function pinInvitationScope(session: ErpSession): Promise<string | undefined> {
  const { key, value } = ERP_INVITATION_SCOPE;
  const [param] = await session.callKw<{ id: number; value: string }[]>(
    'ir.config_parameter',
    'search_read',
    [[['key', '=', key]]],
    { fields: ['value'] },
  );
  if (param?.value === value) return undefined;
  if (param) await session.callKw('ir.config_parameter', 'write', [[param.id], { value }]);
  else await session.callKw('ir.config_parameter', 'create', [{ key, value }]);
  return param?.value;
}

/**
 * Creates the ERP's provider for this client, or brings it up to date, and pins the sign-up scope;
 * answers the provider's id and the sign-up scope it replaced (undefined when it was right).
 */
export async function ensureErpSignInProvider(
  deps: ErpApiUserDeps,
  database: string,
  issuer: string,
  client: TenantOidcClient,
): Promise<{ providerId: number; replacedScope?: string }> {
  const { session } = await adminSession(deps, database);
  const replacedScope = await pinInvitationScope(session);
  const values = erpProviderValues(issuer, client);
  const existing = await session.callKw<{ id: number }[]>(
    'auth.oauth.provider',
    'search_read',
    [[['client_id', '=', client.clientId]]],
    { fields: ['id'] },
  );
  if (existing[0]) {
    await session.callKw('auth.oauth.provider', 'write', [[existing[0].id], values]);
    return { providerId: existing[0].id, replacedScope };
  }
  return { providerId: await session.callKw<number>('auth.oauth.provider', 'create', [values]), replacedScope };
}

/** A workspace member as the ERP gets them: admins with settings rights, members as internal users. */
export interface ErpMember {
  userId: string;
  email: string;
  name: string;
  role: 'admin' | 'member';
}

/** External ids of the groups per workspace role (admins: settings and access rights). */
export const ERP_GROUPS_BY_ROLE = {
  admin: ['base.group_user', 'base.group_erp_manager', 'base.group_system'],
  member: ['base.group_user'],
} as const;

/** The members of the tenant's workspace. */
export async function tenantMembers(pool: pg.Pool, tenant: string): Promise<ErpMember[]> {
  const { rows } = await pool.query<ErpMember>(
    `SELECT u.id AS "userId", u.email, u.name, m.role FROM tenants t
       JOIN memberships m ON m.workspace_id = t.workspace_id JOIN users u ON u.id = m.user_id
      WHERE t.name = $1 ORDER BY u.email`,
    [tenant],
  );
  return rows;
}

/**
 * The ERP users who sign in through the platform's provider (`oauth_uid` = the platform user id):
 * one per member, active, with its role's groups; any other such user archived (a removed member:
 * archiving also ends their ERP sessions, Odoo's session token includes the active flag).
 */
export async function syncErpSignInUsers(
  deps: ErpApiUserDeps,
  database: string,
  providerId: number,
  members: ErpMember[],
): Promise<{ created: number; updated: number; archived: number }> {
  const { session } = await adminSession(deps, database);
  const version = await erpMajorVersion(deps.erpUrl, database);
  const [groups, companies, existing] = await Promise.all([
    Promise.all([
      groupIds(session, database, ERP_GROUPS_BY_ROLE.admin),
      groupIds(session, database, ERP_GROUPS_BY_ROLE.member),
    ]),
    session.callKw<number[]>('res.company', 'search', [[]], { order: 'id' }),
    session.callKw<{ id: number; oauth_uid: string; login: string; active: boolean }[]>(
      'res.users',
      'search_read',
      [[['oauth_provider_id', '=', providerId]]],
      { fields: ['oauth_uid', 'login', 'active'], context: { active_test: false } },
    ),
  ]);
  const counts = { created: 0, updated: 0, archived: 0 };
  for (const m of members) {
    const values = {
      name: m.name || m.email,
      login: m.email,
      active: true,
      oauth_uid: m.userId,
      oauth_provider_id: providerId,
      company_id: companies[0],
      company_ids: [[6, 0, companies]],
      [groupsField(version)]: [[6, 0, m.role === 'admin' ? groups[0] : groups[1]]],
    };
    const user = existing.find((u) => u.oauth_uid === m.userId);
    if (user) await session.callKw('res.users', 'write', [[user.id], values]);
    else await session.callKw('res.users', 'create', [values]);
    counts[user ? 'updated' : 'created']++;
  }
  const removed = existing.filter((u) => u.active && !members.some((m) => m.userId === u.oauth_uid));
  if (removed.length) await session.callKw('res.users', 'write', [removed.map((u) => u.id), { active: false }]);
  counts.archived = removed.length;
  return counts;
}

/** The ERP's provider record as its login page reads it (auth_oauth's `list_providers`, auth_oidc's fields). */
export interface ErpProviderRecord {
  id: number;
  client_id: string;
  auth_endpoint: string;
  scope: string | false;
  flow: string;
  code_verifier: string | false;
}

const PROVIDER_LINK_FIELDS = ['client_id', 'auth_endpoint', 'scope', 'flow', 'code_verifier'];

/**
 * Where the ERP's "Sign in with Plana" leads, built as the ERP builds it on its login page: Odoo's
 * `list_providers` (`redirect_uri` = `{url_root}auth_oauth/signin`, `state` = JSON `{"d": database,
 * "p": provider id, "r": url-quoted redirect}`, default redirect `{url_root}web`) with auth_oidc's
 * code flow (`response_type=code`, a nonce, the PKCE challenge of the provider's `code_verifier`).
 * Odoo binds neither the state nor the nonce to the browser, so a browser sent here comes back to
 * `/auth_oauth/signin` and is signed in as if it had clicked the button: "Open ERP" starts here and
 * lands in the ERP's web client. `erp.baseUrl` is the ERP as browsers reach it (Odoo's `url_root`).
 */
export function erpSignInStartUrl(provider: ErpProviderRecord, erp: { baseUrl: string; database: string }): string {
  if (provider.flow !== 'id_token_code')
    throw new Error(`the ERP's provider ${provider.id} has flow ${provider.flow}, not auth_oidc's id_token_code`);
  const root = `${erp.baseUrl.replace(/\/+$/, '')}/`;
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: provider.client_id,
    redirect_uri: `${root}auth_oauth/signin`,
    scope: provider.scope || '',
    // werkzeug's url_quote_plus of the redirect, as Odoo's get_state
    state: JSON.stringify({ d: erp.database, p: provider.id, r: encodeURIComponent(`${root}web`) }),
    nonce: randomBytes(32).toString('base64url'),
    code_challenge: createHash('sha256')
      .update(provider.code_verifier || '', 'ascii')
      .digest('base64url'),
    code_challenge_method: 'S256',
  });
  return `${provider.auth_endpoint}?${params}`;
}

/**
 * The ERP users of the tenant's workspace brought up to date now (what the reconcile does), for
 * "Open ERP" by someone who joined since the last reconcile, and the ERP's provider record (where
 * "Open ERP" starts the sign-in, erpSignInStartUrl). Undefined when the ERP has no provider for the
 * tenant's client yet (the reconcile has not made the sign-in).
 */
export async function syncTenantErpUsers(
  deps: ErpApiUserDeps,
  tenant: { name: string; database: string },
): Promise<
  { provider: ErpProviderRecord; synced: { created: number; updated: number; archived: number } } | undefined
> {
  const { session } = await adminSession(deps, tenant.database);
  const [provider] = await session.callKw<ErpProviderRecord[]>(
    'auth.oauth.provider',
    'search_read',
    [[['client_id', '=', tenantClientId(tenant.name)]]],
    { fields: PROVIDER_LINK_FIELDS },
  );
  if (!provider) return undefined;
  const members = await tenantMembers(deps.platform, tenant.name);
  return { provider, synced: await syncErpSignInUsers(deps, tenant.database, provider.id, members) };
}
