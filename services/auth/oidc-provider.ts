/**
 * The platform's own OpenID provider (specification §4.8), `oidc-provider` (OpenID certified)
 * mounted in the auth service under the issuer's path (`/application/o`): discovery
 * (`/.well-known/openid-configuration`), `/authorize/`, `/token/`, `/userinfo/` and `/jwks/`.
 * The tenants' ERPs are its relying parties (authorization code flow with PKCE, what Odoo's OCA
 * `auth_oidc` speaks; oidc-provider refuses the bare `response_type=token` of Community's
 * `auth_oauth`).
 *
 * The platform keeps the accounts (`findAccount` reads the users table) and renders login itself
 * (oidc-interactions.ts); every client is a tenant's own ERP (first party), so consent is granted
 * without asking, to members of the tenant's workspace only: anyone else's authorization request
 * ends with `error=access_denied` at the ERP's redirect URI, and no code for that ERP is issued.
 * Signing keys, clients and the provider's records live in PostgreSQL (domain/identity).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Provider, { errors } from 'oidc-provider';
import type pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { purposeKey } from '../../lib/secret-box.js';
import { pgOidcAdapter } from '../../domain/identity/oidc-adapter.js';
import { ERP_SCOPE_REQUESTED, isClientWorkspaceMember } from '../../domain/identity/oidc-clients.js';
import { SIGNING_KEYS_REFRESH_MS, signingKeys, type PrivateJwk } from '../../domain/identity/signing-keys.js';
import type { ServiceApp } from '../../lib/service-app.js';

/** The provider's paths under the issuer, as the specification names them (§4.8). */
export const OIDC_ROUTES = {
  authorization: '/authorize/',
  token: '/token/',
  userinfo: '/userinfo/',
  jwks: '/jwks/',
  end_session: '/end-session/',
};

export interface OidcProviderDeps {
  pool: pg.Pool;
  issuer: string;
  secretsKey: string;
  log: FastifyBaseLogger;
}

/** The issuer's path: where the provider is mounted (`/application/o`). */
export const mountPathOf = (issuer: string) => new URL(issuer).pathname.replace(/\/+$/, '');

interface OidcCtx {
  oidc: {
    client: { clientId: string };
    session: { accountId: string; grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
    provider: { Grant: GrantClass };
  };
}
interface GrantLike {
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
}
interface GrantClass {
  new (init: { clientId: string; accountId: string }): GrantLike;
  find(id: string): Promise<GrantLike | undefined>;
}

/**
 * Consent for a first-party client, given to the members of its tenant's workspace: the grant
 * exists (or is made) with everything the ERP asks for. oidc-provider asks for it on every
 * authorization request of a signed-in account (after a login, and when the provider's session is
 * still open), before any code is issued: anyone else gets `access_denied`, which the provider
 * sends to the client's redirect URI (RFC 6749 §4.1.2.1) with the request's state.
 */
async function memberGrant(pool: pg.Pool, ctx: OidcCtx): Promise<GrantLike> {
  const { client, session, result, provider } = ctx.oidc;
  if (!(await isClientWorkspaceMember(pool, client.clientId, session.accountId)))
    throw new errors.AccessDenied(
      "The signed-in account is not a member of this ERP's workspace; ask a workspace admin to invite it.",
    );
  const grantId = result?.consent?.grantId ?? session.grantIdFor(client.clientId);
  const existing = grantId ? await provider.Grant.find(grantId) : undefined;
  if (existing) return existing;
  const grant = new provider.Grant({ clientId: client.clientId, accountId: session.accountId });
  grant.addOIDCScope(ERP_SCOPE_REQUESTED);
  await grant.save();
  return grant;
}

async function findAccount(pool: pg.Pool, id: string) {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  const { rows } = await pool.query<{ id: string; email: string; name: string }>(
    'SELECT id, email, name FROM users WHERE id = $1',
    [id],
  );
  const user = rows[0];
  if (!user) return undefined;
  return {
    accountId: user.id,
    claims: async () => ({ sub: user.id, email: user.email, email_verified: true, name: user.name || user.email }),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** An error of the provider as a page a person can read (never a stack, never a token). */
function renderError(ctx: { type: string; body: string }, out: { error?: string; error_description?: string }) {
  ctx.type = 'html';
  ctx.body = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed</title></head>
<body><h1>Sign-in failed</h1><p>${escapeHtml(out.error_description ?? out.error ?? 'The request could not be processed.')}</p>
<p>Go back to the application and try again.</p></body></html>`;
}

/**
 * The configured provider. Its signing keys are read (or made) in PostgreSQL, and read again every
 * SIGNING_KEYS_REFRESH_MS: when they changed (a rotation by `npm run cli -- rotate-signing-key`, or a
 * retired key past its grace), a provider with the new key set takes the next requests, so every
 * replica publishes and signs with the new key without a restart. The provider's records (sessions,
 * grants, codes) are in PostgreSQL and its cookie keys stay the same, so nothing in flight is lost.
 */
export async function createOidcProvider(deps: OidcProviderDeps): Promise<ReloadingOidcProvider> {
  const load = async () => {
    const keys = await signingKeys(deps.pool, deps.secretsKey);
    return { kids: keys.map((k) => k.kid).join(','), provider: configuredProvider(deps, keys) };
  };
  let current = await load();
  let handler = current.provider.callback();
  const refresh = async () => {
    const next = await load();
    if (next.kids === current.kids) return false;
    deps.log.info({ kids: next.kids.split(',') }, 'oidc provider signing keys changed: new key set in use');
    current = next;
    handler = next.provider.callback();
    return true;
  };
  const timer = setInterval(() => {
    refresh().catch((err: Error) => deps.log.warn({ error: err.message }, 'oidc provider signing keys not read'));
  }, SIGNING_KEYS_REFRESH_MS);
  timer.unref();
  return {
    callback: () => (req, res) => handler(req, res),
    interactionDetails: (req, res) => current.provider.interactionDetails(req, res),
    interactionFinished: (req, res, result) => current.provider.interactionFinished(req, res, result),
    refreshKeys: refresh,
    close: () => clearInterval(timer),
  };
}

function configuredProvider(deps: OidcProviderDeps, keys: PrivateJwk[]): OidcProvider {
  const mountPath = mountPathOf(deps.issuer);
  const provider = new Provider(deps.issuer, {
    adapter: pgOidcAdapter(deps.pool, deps.secretsKey),
    jwks: { keys },
    findAccount: (_ctx: unknown, id: string) => findAccount(deps.pool, id),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: [purposeKey(deps.secretsKey, 'oidc-provider-cookies')] },
    routes: OIDC_ROUTES,
    responseTypes: ['code'],
    pkce: { required: () => true },
    interactions: {
      url: (_ctx: unknown, interaction: { uid: string }) => `${mountPath}/interaction/${interaction.uid}`,
    },
    loadExistingGrant: (ctx: OidcCtx) => memberGrant(deps.pool, ctx),
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    ttl: {
      Interaction: 600,
      Session: 8 * 3600,
      Grant: 8 * 3600,
      AccessToken: 900,
      IdToken: 900,
      AuthorizationCode: 60,
    },
    renderError,
  });
  for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error'])
    provider.on(event, (_ctx: unknown, err: Error & { error_description?: string }) =>
      deps.log.warn({ event, error: err.message, description: err.error_description }, 'oidc provider refusal'),
    );
  return provider as OidcProvider;
}

/** The part of oidc-provider's API the auth service uses. */
export interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  interactionDetails(
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<{
    uid: string;
    prompt: { name: string };
    params: Record<string, string>;
    session?: { accountId?: string };
  }>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>): Promise<void>;
}

/** The provider as the auth service holds it: its signing keys followed in PostgreSQL. */
export interface ReloadingOidcProvider extends OidcProvider {
  /** Reads the signing keys now; true when they changed and the new set is in use. */
  refreshKeys(): Promise<boolean>;
  /** Stops following the keys. */
  close(): void;
}

/**
 * Mounts the provider at the issuer's path. Its routes read their own bodies, so the scope has a
 * content-type parser that leaves the request stream alone; the path seen by the provider is the
 * one under the mount, as in a framework that strips it (`originalUrl` keeps the whole one).
 */
export async function mountOidcProvider(app: ServiceApp, provider: OidcProvider, issuer: string) {
  const mountPath = mountPathOf(issuer);
  const callback = provider.callback();
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    scope.all(`${mountPath}/*`, { schema: { hide: true } }, async (req, reply) => {
      reply.hijack();
      const raw = req.raw as IncomingMessage & { originalUrl?: string };
      raw.originalUrl = raw.url;
      raw.url = raw.url!.slice(mountPath.length) || '/';
      await callback(raw, reply.raw);
    });
  });
}
