/**
 * A tenant's ERP signs in through the platform's OpenID provider: what the ERP needs, written as
 * its `admin` through Odoo's models. Odoo 18 Community's `auth_oauth` asks for `response_type=token`
 * (the implicit grant), which oidc-provider (certified, OAuth 2.0 Security BCP) refuses; OCA's
 * `auth_oidc` (odoo-addon-auth-oidc) extends the same `auth.oauth.provider` with the authorization
 * code flow and PKCE (`flow = id_token_code`, `token_endpoint`, `jwks_uri`, `client_secret`), and
 * keeps `/auth_oauth/signin` as the callback. So the ERP gets one provider of that flow.
 */
import { adminSession, type ErpApiUserDeps } from '../erp/admin-session.js';
import { ERP_SCOPE_REQUESTED, type TenantOidcClient } from './oidc-clients.js';

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

/** Creates the ERP's provider for this client, or brings it up to date; answers its id. */
export async function ensureErpSignInProvider(
  deps: ErpApiUserDeps,
  database: string,
  issuer: string,
  client: TenantOidcClient,
): Promise<number> {
  const { session } = await adminSession(deps, database);
  const values = erpProviderValues(issuer, client);
  const existing = await session.callKw<{ id: number }[]>(
    'auth.oauth.provider',
    'search_read',
    [[['client_id', '=', client.clientId]]],
    { fields: ['id'] },
  );
  if (existing[0]) {
    await session.callKw('auth.oauth.provider', 'write', [[existing[0].id], values]);
    return existing[0].id;
  }
  return session.callKw<number>('auth.oauth.provider', 'create', [values]);
}
