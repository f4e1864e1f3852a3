/**
 * OIDC login (specification §4.1, §4.8): authorization code + PKCE (S256) with `openid-client`.
 * `start` redirects to the identity provider; `callback` exchanges the code, takes the e-mail from
 * the ID token (or the userinfo endpoint), and logs in the platform user with that e-mail — only
 * when the provider says it is verified. No user is created here: people join a workspace through
 * an admin (`cli users add`), then may log in with either their password or the provider.
 *
 * The PKCE verifier, state and nonce travel in a short-lived cookie, encrypted (A256GCM, jose)
 * with a key derived from AUTH_JWT_SECRET, scoped to the callback path.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { EncryptJWT, jwtDecrypt } from 'jose';
import * as oidc from 'openid-client';
import { Type } from 'typebox';
import type { Config } from '../../../lib/config.js';
import { AppError } from '../../../lib/errors.js';
import { startSession } from '../../../domain/access/login-sessions.js';
import { SessionSchema, sendSession, setRefreshCookie } from './sessions.js';
import { access } from '../../plugins/access.js';
import { findUserByEmail } from '../../../domain/access/workspaces.js';
import { TenantName } from '../../schemas/common.js';

const STATE_COOKIE = 'plana_oidc';
const CALLBACK_PATH = '/api/auth/oidc/callback';

interface PendingLogin {
  verifier: string;
  state: string;
  nonce: string;
  /** started from the browser portal: the callback sets the refresh cookie and redirects to /app/ */
  portal?: boolean;
  /** started from a workspace's page of the portal (/app/w/<slug>/): the callback goes back there */
  workspace?: string;
}
const PORTAL_HOME = '/app/';

/** The login flow's settings: the signing key of its state cookie, the redirect URI, and the provider (discovered on first use, again after a failure). */
function oidcFlow(cfg: Config) {
  const stateKey = createHash('sha256').update(`oidc-state:${cfg.AUTH_JWT_SECRET}`).digest();
  const redirectUri = cfg.OIDC_REDIRECT_URI ?? new URL(CALLBACK_PATH, cfg.API_PUBLIC_URL).toString();

  let discovered: Promise<oidc.Configuration> | undefined;
  function provider(): Promise<oidc.Configuration> {
    if (!cfg.OIDC_ISSUER_URL)
      throw new AppError('NOT_FOUND', 'OIDC login is not configured on this platform (OIDC_ISSUER_URL).');
    discovered ??= oidc
      .discovery(
        new URL(cfg.OIDC_ISSUER_URL),
        cfg.OIDC_CLIENT_ID,
        undefined,
        cfg.OIDC_CLIENT_SECRET ? oidc.ClientSecretBasic(cfg.OIDC_CLIENT_SECRET) : oidc.None(),
        // plain http only for a local provider (dev, tests)
        cfg.OIDC_ISSUER_URL.startsWith('http:') ? { execute: [oidc.allowInsecureRequests] } : undefined,
      )
      .catch((err) => {
        discovered = undefined;
        throw new AppError('BAD_GATEWAY', `The identity provider cannot be reached (${(err as Error).message}).`);
      });
    return discovered;
  }

  const clearStateCookie = (reply: FastifyReply) => reply.clearCookie(STATE_COOKIE, { path: CALLBACK_PATH });
  return { stateKey, redirectUri, provider, clearStateCookie };
}

export default async function oidcRoutes(fastify: FastifyInstance) {
  const flow = oidcFlow(fastify.deps.config);
  methodsRoute(fastify);
  startRoute(fastify, flow);
  callbackRoute(fastify, flow);
}

/** GET /api/auth/methods: the ways to sign in here, so the sign-in page offers only those. */
function methodsRoute(fastify: FastifyInstance) {
  const oidcConfigured = fastify.deps.config.OIDC_ISSUER_URL !== undefined;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/auth/methods',
    {
      config: { access: access.public },
      schema: {
        tags: ['auth'],
        summary: 'The ways to sign in on this platform (the organisation sign-in only when OIDC is configured)',
        response: {
          200: Type.Object({
            password: Type.Boolean(),
            oidc: Type.Boolean({ description: 'true when OIDC_ISSUER_URL is set: GET /api/auth/oidc/start works' }),
          }),
        },
      },
    },
    async () => ({ password: true, oidc: oidcConfigured }),
  );
}

/**
 * Why an organisation sign-in started from the portal could not begin, told by the portal's
 * sign-in page (`?oidc=<reason>`) instead of a problem body the browser would show raw.
 */
function portalSignInProblem(reply: FastifyReply, pending: Pick<PendingLogin, 'workspace'>, err: unknown) {
  if (!(err instanceof AppError) || (err.code !== 'NOT_FOUND' && err.code !== 'BAD_GATEWAY')) throw err;
  const reason = err.code === 'NOT_FOUND' ? 'not-configured' : 'unreachable';
  const page = pending.workspace ? `${PORTAL_HOME}w/${pending.workspace}/` : PORTAL_HOME;
  return reply.code(303).header('location', `${page}?oidc=${reason}`).header('cache-control', 'no-store').send(null);
}

/** GET /api/auth/oidc/start: to the identity provider, with a signed state cookie. */
function startRoute(fastify: FastifyInstance, flow: ReturnType<typeof oidcFlow>) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const cfg: Config = app.deps.config;
  const { stateKey, redirectUri, provider } = flow;
  app.get(
    '/api/auth/oidc/start',
    {
      config: { access: access.public },
      schema: {
        tags: ['auth'],
        summary: 'Begin an OIDC login: redirects to the identity provider (authorization code + PKCE)',
        description:
          'With portal=true the callback ends in the browser portal (/app/, signed in by the refresh cookie) instead of answering the session as JSON; ' +
          'with a workspace as well, in that workspace of the portal (/app/w/<slug>/). ' +
          'OIDC not configured (404) or the provider unreachable (502): with portal=true, a 303 back to the portal’s sign-in page, which says so (`?oidc=not-configured` or `?oidc=unreachable`).',
        querystring: Type.Object({
          portal: Type.Optional(Type.Boolean()),
          workspace: Type.Optional({
            ...TenantName,
            description: 'with portal=true: the workspace (slug) to open after the login',
          }),
        }),
        response: {
          302: Type.Null(),
          303: Type.Null({ description: 'portal=true only: back to the sign-in page, which says why' }),
          400: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          502: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      let config: oidc.Configuration;
      try {
        config = await provider();
      } catch (err) {
        if (!req.query.portal) throw err;
        return portalSignInProblem(reply, { workspace: req.query.workspace }, err);
      }
      const pending: PendingLogin = {
        verifier: oidc.randomPKCECodeVerifier(),
        state: oidc.randomState(),
        nonce: oidc.randomNonce(),
      };
      if (req.query.portal) pending.portal = true;
      if (req.query.portal && req.query.workspace) pending.workspace = req.query.workspace;
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      const sealed = await new EncryptJWT({ ...pending })
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
        .setIssuedAt()
        .setExpirationTime('10m')
        .encrypt(stateKey);
      reply.setCookie(STATE_COOKIE, sealed, {
        path: CALLBACK_PATH,
        httpOnly: true,
        sameSite: 'lax', // the provider redirects back with a top-level GET
        secure: cfg.NODE_ENV === 'production',
        maxAge: 600,
      });
      return reply.code(302).header('location', url.toString()).header('cache-control', 'no-store').send(null);
    },
  );
}

/** The login the state cookie carries; 400 when there is none, or it is not valid or expired. */
async function pendingLogin(sealed: string | undefined, stateKey: Uint8Array): Promise<PendingLogin> {
  if (!sealed)
    throw new AppError(
      'BAD_REQUEST',
      'No OIDC login in progress in this browser (or it expired); start again at /api/auth/oidc/start.',
    );
  try {
    return (await jwtDecrypt(sealed, stateKey)).payload as unknown as PendingLogin;
  } catch {
    throw new AppError(
      'BAD_REQUEST',
      'The OIDC login state is not valid or expired; start again at /api/auth/oidc/start.',
    );
  }
}

/** The provider's tokens for the redirect's code (PKCE, state and nonce checked); 401 when it refuses. */
async function exchangeCode(
  config: oidc.Configuration,
  currentUrl: URL,
  pending: PendingLogin,
  log: FastifyBaseLogger,
): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
  try {
    return await oidc.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: pending.verifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
  } catch (err) {
    log.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, 'OIDC code exchange refused');
    throw new AppError('UNAUTHORIZED', 'The identity provider did not confirm this login.');
  }
}

/** The e-mail address the provider vouches for (ID token, else userinfo); 403 when not verified. */
async function verifiedEmail(
  config: oidc.Configuration,
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
): Promise<string> {
  let claims: { sub: string; email?: unknown; email_verified?: unknown } = tokens.claims()!;
  if (typeof claims.email !== 'string') claims = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  if (typeof claims.email !== 'string' || claims.email_verified !== true) {
    throw new AppError('FORBIDDEN', 'The identity provider did not vouch for a verified e-mail address.');
  }
  return claims.email;
}

/** GET /api/auth/oidc/callback: back from the identity provider, a session started. */
function callbackRoute(fastify: FastifyInstance, flow: ReturnType<typeof oidcFlow>) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const cfg: Config = app.deps.config;
  const { stateKey, redirectUri, provider, clearStateCookie } = flow;
  app.get(
    CALLBACK_PATH,
    {
      // the identity provider's redirect: `code` and `state` in the query, by OAuth 2.0
      config: { access: access.public, queryCredentials: 'oauth-redirect' },
      schema: {
        tags: ['auth'],
        summary: 'OIDC callback: logs in the user whose verified e-mail the provider vouches for',
        querystring: Type.Object({}, { additionalProperties: true }),
        response: {
          200: SessionSchema,
          303: Type.Null(),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          403: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          502: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const config = await provider();
      clearStateCookie(reply);
      const pending = await pendingLogin(req.cookies[STATE_COOKIE], stateKey);
      const currentUrl = new URL(redirectUri);
      currentUrl.search = new URL(req.url, 'http://callback').search;
      const tokens = await exchangeCode(config, currentUrl, pending, req.log);
      const user = await findUserByEmail(app.deps.pool, await verifiedEmail(config, tokens));
      if (!user)
        throw new AppError(
          'FORBIDDEN',
          'No platform account has this e-mail address; ask a workspace admin to add you.',
        );
      req.log.info({ userId: user.id }, 'user logged in with OIDC');
      const session = await startSession(app.deps.pool, cfg, user);
      if (pending.portal) {
        // the portal reads no token from the URL: it signs in from the refresh cookie on load
        setRefreshCookie(app, reply, session);
        // a slug (TenantName: lowercase letters, digits, hyphens) keeps the redirect inside the portal
        return reply
          .code(303)
          .header('location', pending.workspace ? `${PORTAL_HOME}w/${pending.workspace}/` : PORTAL_HOME)
          .send(null);
      }
      return sendSession(app, reply, session);
    },
  );
}
