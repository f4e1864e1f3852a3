/**
 * The auth service (specification §4.5): interactive login for the platform's internal services.
 * `POST /api/v1/auth/login`, `POST /api/v1/auth/refresh`, `GET /api/v1/status` (each with
 * `X-API-Key`, as every internal service) and `GET /swagger` (its OpenAPI document and UI).
 *
 * It shares everything with the account API's `/api/auth/*` (domain/access/login-sessions.ts and
 * login-throttle.ts): the same users, the same sessions (refresh-token families in PostgreSQL), the
 * same access tokens (JWT, HS256, AUTH_JWT_SECRET), the same reuse detection and the same password
 * throttle. A session started here is accepted by the account API and the other way round. The
 * difference is the transport: the account API serves browsers (refresh token in an httpOnly cookie);
 * this service serves other services, so the refresh token travels in the JSON body.
 *
 * It also serves the platform's own OpenID provider for the tenants' ERPs (§4.8, oidc-provider.ts,
 * under `/application/o`) and its login page (oidc-interactions.ts).
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { sendProblem } from '../../lib/http.js';
import { buildServiceApp, type ServiceApp } from '../../lib/service-app.js';
import { loginWithPassword, refreshSession, type IssuedSession } from '../../domain/access/login-sessions.js';
import { PasswordThrottle } from '../../domain/access/login-throttle.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { ProblemSchema, Text } from '../../api/schemas/common.js';
import { registerKeyedRoutes, type KeyedRoutes } from '../service-routes.js';
import type { DestinationStream } from 'pino';
import { oidcProviderIssuer } from '../../domain/identity/oidc-clients.js';
import { createOidcProvider, mountOidcProvider } from './oidc-provider.js';
import { registerInteractions, registerPortalHandoff } from './oidc-interactions.js';

export const AUTH_TARGET = 'auth';

export interface AuthDeps {
  pool: pg.Pool;
  redis: Redis;
  config: Pick<
    Config,
    | 'AUTH_JWT_SECRET'
    | 'ACCESS_TOKEN_TTL_SECONDS'
    | 'REFRESH_TOKEN_TTL_SECONDS'
    | 'LOGIN_MAX_FAILURES'
    | 'LOGIN_FAILURE_WINDOW_SECONDS'
    | 'LOG_LEVEL'
    | 'SECRETS_KEY'
    | 'AUTH_URL'
    | 'OIDC_PROVIDER_ISSUER'
  >;
  /** The service-key check of target `auth` (domain/service-keys/verifier.ts): every registered caller may call. */
  serviceKeys: ServiceKeyCheck;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

const Problem = Type.Ref('Problem');
const AuthSession = Type.Object({
  accessToken: Type.String({ description: 'JWT (HS256); the account API accepts it as Authorization: Bearer' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'seconds' }),
  refreshToken: Type.String({
    description: 'single use: every refresh returns a new one; presenting a spent one ends the session',
  }),
  refreshExpiresIn: Type.Integer({ description: 'seconds' }),
  user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }),
});
const Probe = Type.Object({ status: Type.String() });

const sessionBody = (s: IssuedSession) => ({
  accessToken: s.accessToken,
  tokenType: 'Bearer' as const,
  expiresIn: s.expiresIn,
  refreshToken: s.refreshToken,
  refreshExpiresIn: s.refreshExpiresIn,
  user: s.user,
});

export async function buildAuthApp(deps: AuthDeps): Promise<FastifyInstance> {
  const app = await buildServiceApp(deps.config.LOG_LEVEL, { service: 'auth', logStream: deps.logStream });
  app.addSchema(ProblemSchema);
  await registerOpenApi(app);
  registerReadiness(app, deps);
  const startedAt = Date.now();
  const throttle = new PasswordThrottle(deps.redis, deps.config);
  await registerKeyedRoutes(app, deps.serviceKeys, { hideKeyCheck: true }, (v1) => {
    registerLogin(v1, deps, throttle);
    registerRefresh(v1, deps);
    registerStatus(v1, deps, startedAt);
  });
  await registerOidcProvider(app, deps, throttle);
  return app;
}

/** The platform's OpenID provider for the tenants' ERPs (oidc-provider.ts) and its login pages. */
async function registerOidcProvider(app: ServiceApp, deps: AuthDeps, throttle: PasswordThrottle) {
  const issuer = oidcProviderIssuer(deps.config);
  const provider = await createOidcProvider({
    pool: deps.pool,
    issuer,
    secretsKey: deps.config.SECRETS_KEY,
    log: app.log,
  });
  const interactions = {
    pool: deps.pool,
    redis: deps.redis,
    provider,
    issuer,
    secretsKey: deps.config.SECRETS_KEY,
    throttle,
  };
  app.addHook('onClose', async () => provider.close());
  await registerInteractions(app, interactions);
  registerPortalHandoff(app, interactions);
  await mountOidcProvider(app, provider, issuer);
}

async function registerOpenApi(app: ServiceApp) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plana auth service',
        version: '0.1.0',
        description:
          "Login and refresh for the platform's internal services, on the account API's users and sessions. Every /api/v1 route needs X-API-Key (a service key registered for target `auth`). " +
          'Errors are RFC 9457 problem details.',
      },
      components: { securitySchemes: { serviceKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
      security: [{ serviceKey: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/swagger' });
}

/** /healthz, and /readyz: PostgreSQL and Redis answer. */
function registerReadiness(app: ServiceApp, deps: AuthDeps) {
  app.get('/healthz', { schema: { hide: true, response: { 200: Probe } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Probe } } }, async (req, reply) => {
    const failing: string[] = [];
    await deps.pool.query('SELECT 1').catch(() => failing.push('postgresql'));
    await deps.redis.ping().catch(() => failing.push('redis'));
    if (failing.length)
      return sendProblem(reply, 'UNAVAILABLE', `Not ready: ${failing.join(', ')} not reachable.`, { failing });
    return { status: 'ready' };
  });
}

function registerLogin(v1: KeyedRoutes, deps: AuthDeps, throttle: PasswordThrottle) {
  v1.post(
    '/api/v1/auth/login',
    {
      schema: {
        summary: 'Log a user in with e-mail and password: an access token and a refresh token',
        body: Type.Object(
          { email: Text({ minLength: 3, maxLength: 320 }), password: Text({ minLength: 1, maxLength: 1024 }) },
          { additionalProperties: false },
        ),
        response: { 200: AuthSession, 400: Problem, 401: Problem, 429: Problem },
      },
    },
    async (req, reply) => {
      // failures count per e-mail and calling service (address and caller): its users share its address
      const session = await throttle.attempt(
        PasswordThrottle.loginKey(req.body.email, `${req.serviceCaller?.caller}|${req.ip}`),
        () => loginWithPassword(deps.pool, deps.config, req.body.email, req.body.password),
        (seconds) => reply.header('retry-after', seconds),
      );
      req.log.info({ userId: session.user.id, serviceCaller: req.serviceCaller?.caller }, 'user logged in');
      return reply.header('cache-control', 'no-store').send(sessionBody(session));
    },
  );
}

function registerRefresh(v1: KeyedRoutes, deps: AuthDeps) {
  v1.post(
    '/api/v1/auth/refresh',
    {
      schema: {
        summary: 'Exchange a refresh token for a new access token and a new refresh token (rotation)',
        body: Type.Object({ refreshToken: Text({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: AuthSession, 400: Problem, 401: Problem },
      },
    },
    async (req, reply) =>
      reply
        .header('cache-control', 'no-store')
        .send(sessionBody(await refreshSession(deps.pool, deps.config, req.body.refreshToken))),
  );
}

function registerStatus(v1: KeyedRoutes, deps: AuthDeps, startedAt: number) {
  v1.get(
    '/api/v1/status',
    {
      schema: {
        summary: "The service's state and the token lifetimes it issues",
        response: {
          200: Type.Object({
            service: Type.Literal('auth'),
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            postgresql: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
            redis: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
            accessTokenTtlSeconds: Type.Integer(),
            refreshTokenTtlSeconds: Type.Integer(),
            uptimeSeconds: Type.Integer(),
          }),
        },
      },
    },
    async () => {
      const postgresql = await deps.pool.query('SELECT 1').then(
        () => 'ok' as const,
        () => 'unreachable' as const,
      );
      const redis = await deps.redis.ping().then(
        () => 'ok' as const,
        () => 'unreachable' as const,
      );
      return {
        service: 'auth' as const,
        status: postgresql === 'ok' && redis === 'ok' ? ('ok' as const) : ('degraded' as const),
        postgresql,
        redis,
        accessTokenTtlSeconds: deps.config.ACCESS_TOKEN_TTL_SECONDS,
        refreshTokenTtlSeconds: deps.config.REFRESH_TOKEN_TTL_SECONDS,
        uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
      };
    },
  );
}
