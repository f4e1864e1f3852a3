/**
 * The relying parties of the platform's OpenID provider: one per tenant ERP, created by
 * provisioning (idempotently) and removed by deprovisioning. A client's redirect URI is its
 * tenant's `{tenant_base_url}/auth_oauth/signin` (what Odoo sends as `redirect_uri`); its secret is
 * sealed with SECRETS_KEY (the provider compares it in clear, so it cannot be a hash) and only ever
 * handed to the tenant's ERP configuration.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../../lib/db.js';
import { open, purposeKey, seal } from '../../lib/secret-box.js';

export interface TenantOidcClient {
  clientId: string;
  /** Never log it. */
  clientSecret: string;
  redirectUri: string;
}

const sealingKey = (secretsKey: string) => purposeKey(secretsKey, 'oidc-client-secrets');

/** The client id of a tenant's ERP: stable, readable in the provider's logs. */
export const tenantClientId = (tenant: string) => `erp-${tenant}`;

/** The ERP's sign-in callback, the only redirect URI its client may use. */
export const erpRedirectUri = (tenantBaseUrl: string) => `${tenantBaseUrl.replace(/\/+$/, '')}/auth_oauth/signin`;

/**
 * Creates the tenant's client, or returns the existing one (its redirect URI brought up to date).
 * The secret is made once and kept, so a reconcile never breaks an ERP already configured.
 */
export async function ensureTenantClient(
  db: Queryable,
  secretsKey: string,
  tenant: string,
  redirectUri: string,
): Promise<TenantOidcClient> {
  const clientId = tenantClientId(tenant);
  const sealed = seal(randomBytes(32).toString('base64url'), sealingKey(secretsKey));
  const { rows } = await db.query<{ sealed_secret: string }>(
    `INSERT INTO oidc_clients (client_id, tenant, redirect_uri, sealed_secret) VALUES ($1, $2, $3, $4)
     ON CONFLICT (client_id) DO UPDATE SET redirect_uri = EXCLUDED.redirect_uri,
       updated_at = CASE WHEN oidc_clients.redirect_uri = EXCLUDED.redirect_uri THEN oidc_clients.updated_at ELSE now() END
     RETURNING sealed_secret`,
    [clientId, tenant, redirectUri, sealed],
  );
  return { clientId, clientSecret: open(rows[0]!.sealed_secret, sealingKey(secretsKey)), redirectUri };
}

/** Removes the tenant's client (deprovisioning); true when there was one. */
export async function removeTenantClient(db: Queryable, tenant: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM oidc_clients WHERE tenant = $1', [tenant]);
  return (rowCount ?? 0) > 0;
}

/** The client's metadata as oidc-provider reads it (`Client` model), or undefined. */
export async function clientMetadata(
  pool: pg.Pool,
  secretsKey: string,
  clientId: string,
): Promise<Record<string, unknown> | undefined> {
  const { rows } = await pool.query<{ redirect_uri: string; sealed_secret: string }>(
    'SELECT redirect_uri, sealed_secret FROM oidc_clients WHERE client_id = $1',
    [clientId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    client_id: clientId,
    client_secret: open(row.sealed_secret, sealingKey(secretsKey)),
    redirect_uris: [row.redirect_uri],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    // what OCA's auth_oidc sends: HTTP Basic (requests' auth=(client_id, client_secret))
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
  };
}

/**
 * Whether the account is a member (any role) of the workspace whose tenant's ERP the client is:
 * the provider signs only them in to that ERP (a code for anyone else would reach an ERP that has
 * no user for them at best).
 */
export async function isClientWorkspaceMember(pool: pg.Pool, clientId: string, userId: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `SELECT 1 FROM oidc_clients c JOIN tenants t ON t.name = c.tenant
       JOIN memberships m ON m.workspace_id = t.workspace_id
      WHERE c.client_id = $1 AND m.user_id = $2`,
    [clientId, userId],
  );
  return (rowCount ?? 0) > 0;
}

/** The platform's OpenID provider's issuer: OIDC_PROVIDER_ISSUER, else the auth service's `/application/o`. */
export const oidcProviderIssuer = (cfg: { OIDC_PROVIDER_ISSUER?: string; AUTH_URL: string }) =>
  (cfg.OIDC_PROVIDER_ISSUER ?? `${cfg.AUTH_URL.replace(/\/+$/, '')}/application/o`).replace(/\/+$/, '');

/**
 * Whether the provider answers its discovery document (what an ERP's sign-in starts with): undefined
 * when it does, else why not, in words for a status message.
 */
export async function whyProviderUnavailable(issuer: string): Promise<string | undefined> {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5_000) }).catch(
    (err: Error) => err,
  );
  if (res instanceof Error)
    return `the OpenID provider ${issuer} does not answer (${String(res.cause ?? res.message)})`;
  await res.arrayBuffer();
  return res.ok ? undefined : `the OpenID provider ${issuer} answered HTTP ${res.status}`;
}

/** What the ERPs ask the provider for (the provider grants all of it to a first-party client). */
export const ERP_SCOPE_REQUESTED = 'openid email profile';

/** {tenant_base_url}: TENANT_BASE_URL with the tenant's hostname for `{host}`. */
export const tenantBaseUrl = (cfg: { TENANT_BASE_URL: string }, host: string) =>
  cfg.TENANT_BASE_URL.replace('{host}', host).replace(/\/+$/, '');
