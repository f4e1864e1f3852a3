/**
 * Interactive login (specification §4.1, §5.6; DESIGN §5): login, refresh, logout, me.
 * The access token is returned in the body (send it as `Authorization: Bearer`); the refresh token
 * travels only in an httpOnly cookie scoped to /api/auth, and rotates on every refresh.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import type { IssuedSession } from '../../../domain/access/login-sessions.js';
import {
  decodeAccessToken,
  endSession,
  endSessionById,
  INVALID_SESSION,
  loginWithPassword,
  refreshSession,
  userWithMemberships,
} from '../../../domain/access/login-sessions.js';
import { PasswordThrottle } from '../../../domain/access/login-throttle.js';
import { bearer } from '../../plugins/access.js';
import { TOKEN_PREFIX } from '../../../domain/access/api-keys.js';
import { Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

export const REFRESH_COOKIE = 'plana_refresh';
const COOKIE_PATH = '/api/auth';

export const UserSchema = Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() });
export const SessionSchema = Type.Object({
  accessToken: Type.String({ description: 'JWT; send as Authorization: Bearer' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'seconds' }),
  user: UserSchema,
});

/** Sets the refresh cookie (HttpOnly, SameSite=Strict, Secure in production, scoped to /api/auth). */
export function setRefreshCookie(app: FastifyInstance, reply: FastifyReply, s: IssuedSession) {
  reply.setCookie(REFRESH_COOKIE, s.refreshToken, {
    path: COOKIE_PATH,
    httpOnly: true,
    sameSite: 'strict',
    secure: app.deps.config.NODE_ENV === 'production',
    maxAge: s.refreshExpiresIn,
  });
  reply.header('cache-control', 'no-store');
}

/** Sets the refresh cookie and answers with the access token (and `extra` fields, e.g. an accepted invitation's workspace). */
export function sendSession(
  app: FastifyInstance,
  reply: FastifyReply,
  s: IssuedSession,
  extra: Record<string, unknown> = {},
) {
  setRefreshCookie(app, reply, s);
  return reply.send({
    accessToken: s.accessToken,
    tokenType: 'Bearer' as const,
    expiresIn: s.expiresIn,
    user: s.user,
    ...extra,
  });
}

/**
 * CSRF protection of the cookie-authenticated writes (login, refresh, logout): besides the
 * SameSite=Strict cookie, a browser request must come from this site. Browsers name the
 * requesting site in Sec-Fetch-Site and Origin; a cross-site one gets 403. A client that sends
 * neither (curl, a server) is not a browser, so no other site can make it send the cookie.
 */
export async function requireSameOrigin(req: FastifyRequest): Promise<void> {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') {
    throw new AppError('FORBIDDEN', 'Cross-site request refused: sign in from the portal itself.');
  }
  const origin = req.headers.origin;
  if (typeof origin === 'string') {
    const own = new Set([new URL(req.server.deps.config.API_PUBLIC_URL).origin, `${req.protocol}://${req.host}`]);
    if (!own.has(origin))
      throw new AppError('FORBIDDEN', 'Cross-site request refused: sign in from the portal itself.');
  }
}

export default async function sessionRoutes(fastify: FastifyInstance) {
  sessionStartRoutes(fastify);
  sessionEndRoutes(fastify);
}

/** Starting a session: login (throttled per account and address), refresh (rotating the refresh cookie). */
function sessionStartRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const clearRefreshCookie = (reply: FastifyReply) => reply.clearCookie(REFRESH_COOKIE, { path: COOKIE_PATH });
  const throttle = new PasswordThrottle(app.deps.redis, app.deps.config);

  app.post(
    '/api/auth/login',
    {
      config: { access: access.public },
      onRequest: requireSameOrigin,
      schema: {
        tags: ['auth'],
        summary: 'Log in with e-mail and password',
        body: Type.Object(
          { email: Text({ minLength: 3, maxLength: 320 }), password: Text({ minLength: 1, maxLength: 1024 }) },
          { additionalProperties: false },
        ),
        response: {
          200: SessionSchema,
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          403: Type.Ref('Problem'),
          429: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { pool, config } = app.deps;
      // failed attempts count per (e-mail, client address): guessing is throttled, while nobody
      // elsewhere can lock the owner out of the account
      const session = await throttle.attempt(
        PasswordThrottle.loginKey(req.body.email, req.ip),
        () => loginWithPassword(pool, config, req.body.email, req.body.password),
        (seconds) => reply.header('retry-after', seconds),
      );
      req.log.info({ userId: session.user.id }, 'user logged in');
      return sendSession(app, reply, session);
    },
  );

  app.post(
    '/api/auth/refresh',
    {
      config: { access: access.public },
      onRequest: requireSameOrigin,
      schema: {
        tags: ['auth'],
        summary: 'Exchange the refresh cookie for a new access token (the cookie rotates)',
        response: { 200: SessionSchema, 401: Type.Ref('Problem'), 403: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const token = req.cookies[REFRESH_COOKIE];
      if (!token) throw new AppError('UNAUTHORIZED', INVALID_SESSION);
      try {
        return sendSession(app, reply, await refreshSession(app.deps.pool, app.deps.config, token));
      } catch (err) {
        clearRefreshCookie(reply);
        throw err;
      }
    },
  );
}

/** The session's user (GET /api/auth/me) and its end (logout). */
function sessionEndRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const clearRefreshCookie = (reply: FastifyReply) => reply.clearCookie(REFRESH_COOKIE, { path: COOKIE_PATH });

  app.post(
    '/api/auth/logout',
    {
      config: { access: access.public },
      onRequest: requireSameOrigin,
      schema: {
        tags: ['auth'],
        summary: 'End the session: revokes the refresh cookie and the access tokens of its session',
        description:
          'Send the refresh cookie, or the access token as Authorization: Bearer, or both. The session ends at once: its access tokens get 401 from then on.',
        response: { 204: Type.Null(), 403: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const token = req.cookies[REFRESH_COOKIE];
      if (token) await endSession(app.deps.pool, token);
      const accessToken = bearer(req);
      if (accessToken && !accessToken.startsWith(TOKEN_PREFIX)) {
        // an expired or forged token has no session to end; logging out stays a 204
        const session = await decodeAccessToken(app.deps.config, accessToken).catch(() => undefined);
        if (session) await endSessionById(app.deps.pool, session.sessionId);
      }
      clearRefreshCookie(reply);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/auth/me',
    {
      config: { access: access.user },
      schema: {
        tags: ['auth'],
        summary: 'The logged-in user, the workspaces and the role in each',
        response: {
          200: Type.Object({
            user: UserSchema,
            workspaces: Type.Array(
              Type.Object({
                id: Type.String(),
                slug: Type.String(),
                name: Type.String(),
                role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
              }),
            ),
          }),
          401: Type.Ref('Problem'),
          403: Type.Ref('Problem'),
        },
      },
    },
    async (req) => userWithMemberships(app.deps.pool, req.user!.id),
  );
}
