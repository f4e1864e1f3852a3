/**
 * The OpenID provider's login, rendered by the platform (headless interactions): the provider
 * sends the browser to `{issuer}/interaction/<uid>`; the page asks for the platform account's
 * e-mail and password (the same accounts, hashes and throttle as the portal's sign-in), or, when
 * the browser carries a portal hand-off (erp-handoff.ts: the person already signed in to the portal
 * opened their ERP), finishes the login without asking. Consent is never asked: the relying
 * parties are the tenants' own ERPs (oidc-provider.ts, memberGrant: members of the tenant's workspace only).
 */
import { parse as parseForm } from 'node:querystring';
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import type { ServiceApp } from '../../lib/service-app.js';
import { accountWithPassword } from '../../domain/identity/accounts.js';
import { PasswordThrottle } from '../../domain/access/login-throttle.js';
import type { Redis } from 'ioredis';
import {
  HANDOFF_COOKIE,
  HANDOFF_COOKIE_TTL_SECONDS,
  handedOffAccount,
  handoffCookieValue,
  redeemErpHandoff,
} from '../../domain/identity/erp-handoff.js';
import { mountPathOf, type OidcProvider } from './oidc-provider.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const loginPage = (action: string, message?: string, email = '') => `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in | Plana</title></head>
<body>
<h1>Sign in to Plana</h1>
${message ? `<p role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}">
  <label for="email">E-mail</label> <input type="email" name="email" id="email" value="${escapeHtml(email)}" required autofocus>
  <label for="password">Password</label> <input type="password" name="password" id="password" required autocomplete="current-password">
  <button type="submit">Sign in</button>
</form>
</body></html>
`;

const expiredPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in expired | Plana</title></head>
<body><h1>This sign-in has expired</h1><p>Go back to the application and start again.</p></body></html>
`;

export interface InteractionDeps {
  pool: pg.Pool;
  redis: Redis;
  provider: OidcProvider;
  issuer: string;
  secretsKey: string;
  throttle: PasswordThrottle;
}

const handoffExpiredPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Link expired | Plana</title></head>
<body><h1>This link has expired or was already used</h1><p>Open your ERP again from the portal.</p></body></html>
`;

/**
 * GET `{issuer}/portal-sign-in?handoff_token=…` (erp-handoff.ts; a name the request log redacts): the portal's single-use ticket becomes a
 * short-lived signed cookie on the provider's origin, and the browser goes on to the hand-off's target
 * (the ERP's sign-in at this provider, which the cookie then finishes without a form).
 */
export function registerPortalHandoff(app: ServiceApp, deps: InteractionDeps) {
  const mountPath = mountPathOf(deps.issuer);
  app.get<{ Querystring: { handoff_token?: string } }>(
    `${mountPath}/portal-sign-in`,
    { schema: { hide: true } },
    async (req, reply) => {
      const handoff = req.query.handoff_token ? await redeemErpHandoff(deps.redis, req.query.handoff_token) : undefined;
      if (!handoff)
        return reply.code(400).type('text/html').header('cache-control', 'no-store').send(handoffExpiredPage);
      const cookie = `${HANDOFF_COOKIE}=${handoffCookieValue(deps.secretsKey, handoff.userId)}; Max-Age=${HANDOFF_COOKIE_TTL_SECONDS}; Path=${mountPath}; HttpOnly; SameSite=Lax${deps.issuer.startsWith('https:') ? '; Secure' : ''}`;
      req.log.info({ userId: handoff.userId }, 'portal hand-off to the ERP');
      return reply
        .code(303)
        .header('set-cookie', cookie)
        .header('cache-control', 'no-store')
        .redirect(handoff.target, 303);
    },
  );
}

/** The account of the browser's portal hand-off cookie, while valid. */
function handoffAccount(secretsKey: string, cookieHeader: string | undefined): string | undefined {
  const value = (cookieHeader ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${HANDOFF_COOKIE}=`))
    ?.slice(HANDOFF_COOKIE.length + 1);
  return handedOffAccount(secretsKey, value);
}

/** GET `{issuer}/interaction/:uid` (the login page) and POST `…/login` (its form). */
export async function registerInteractions(app: ServiceApp, deps: InteractionDeps) {
  const base = `${mountPathOf(deps.issuer)}/interaction`;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
      done(null, parseForm(body as string)),
    );

    scope.get<{ Params: { uid: string } }>(`${base}/:uid`, { schema: { hide: true } }, async (req, reply) => {
      const details = await deps.provider.interactionDetails(req.raw, reply.raw).catch(() => undefined);
      if (!details) return reply.code(400).type('text/html').send(expiredPage);
      const accountId = handoffAccount(deps.secretsKey, req.headers.cookie);
      if (accountId) {
        reply.hijack();
        return deps.provider.interactionFinished(req.raw, reply.raw, { login: { accountId } });
      }
      return reply
        .type('text/html')
        .header('cache-control', 'no-store')
        .send(loginPage(`${base}/${details.uid}/login`));
    });

    scope.post<{ Params: { uid: string }; Body: Record<string, unknown> }>(
      `${base}/:uid/login`,
      { schema: { hide: true } },
      async (req, reply) => {
        const details = await deps.provider.interactionDetails(req.raw, reply.raw).catch(() => undefined);
        if (!details) return reply.code(400).type('text/html').send(expiredPage);
        const email = typeof req.body?.email === 'string' ? req.body.email : '';
        const password = typeof req.body?.password === 'string' ? req.body.password : '';
        try {
          const account = await deps.throttle.attempt(
            PasswordThrottle.loginKey(email, req.ip),
            () => accountWithPassword(deps.pool, email, password),
            (seconds) => reply.header('retry-after', seconds),
          );
          req.log.info({ userId: account.id }, 'user signed in at the OpenID provider');
          reply.hijack();
          return deps.provider.interactionFinished(req.raw, reply.raw, { login: { accountId: account.id } });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          const status = err.code === 'RATE_LIMITED' ? 429 : 401;
          return reply
            .code(status)
            .type('text/html')
            .send(loginPage(`${base}/${details.uid}/login`, err.message, email));
        }
      },
    );
  });
}
