/**
 * The tenant's ERP signs in through the platform's OpenID provider (a composed resource of its own,
 * `erpSignIn`, non-fatal: the tenant turns Ready without it and the next reconcile makes it): the
 * ERP's client at the provider, the ERP's `auth.oauth.provider`, and the ERP users of the
 * workspace's members (domain/identity/erp-sign-in.ts).
 */
import { erpApiUserDeps } from '../domain/erp/admin-session.js';
import {
  ensureErpSignInModule,
  ensureErpSignInProvider,
  syncErpSignInUsers,
  tenantMembers,
} from '../domain/identity/erp-sign-in.js';
import {
  ensureTenantClient,
  erpRedirectUri,
  oidcProviderIssuer,
  removeTenantClient,
  tenantBaseUrl,
  whyProviderUnavailable,
} from '../domain/identity/oidc-clients.js';
import type { PlatformDeps } from './deps.js';

export const createTenantSignInActivities = ({ config, platformPool }: PlatformDeps) => ({
  /**
   * The ERP's client at the provider, the ERP's sign-in module (installed when missing: minutes on
   * real Odoo), its provider record and its members' users (all idempotent).
   */
  async ensureErpSignIn(input: { tenant: string; database: string; host: string }) {
    const issuer = oidcProviderIssuer(config);
    const unavailable = await whyProviderUnavailable(issuer);
    if (unavailable) throw new Error(`${unavailable}: the ERP's client is not created yet`);
    const redirectUri = erpRedirectUri(tenantBaseUrl(config, input.host));
    const client = await ensureTenantClient(platformPool, config.SECRETS_KEY, input.tenant, redirectUri);
    const deps = erpApiUserDeps(config, platformPool);
    const moduleInstalled = await ensureErpSignInModule(deps, input.database);
    const { providerId, replacedScope } = await ensureErpSignInProvider(deps, input.database, issuer, client);
    const users = await syncErpSignInUsers(
      deps,
      input.database,
      providerId,
      await tenantMembers(platformPool, input.tenant),
    );
    return { clientId: client.clientId, redirectUri, providerId, moduleInstalled, replacedScope, ...users };
  },

  /** Deprovisioning: the client goes (its ERP goes with the database). */
  async removeErpSignIn(input: { tenant: string }) {
    return { removed: await removeTenantClient(platformPool, input.tenant) };
  },
});
