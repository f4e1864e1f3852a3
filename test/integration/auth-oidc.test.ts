/**
 * OIDC login against a real OpenID provider (`oidc-provider`, started here with its development
 * login and consent pages): the test plays the browser — start, log in at the provider, consent,
 * callback — and the account API exchanges the code with PKCE and logs in the user whose verified
 * e-mail the provider vouches for.
 */
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { freePort } from '../../scripts/local-servers.js';
import { testConfig } from '../support/env.js';
import { addUser, addWorkspace, call } from '../support/workspace-api.js';
import { Browser } from '../support/http-browser.js';

let cfg: Config;
let pool: Pool;
let api: Awaited<ReturnType<typeof startApi>>;
let idp: Server;
let issuer: string;

beforeAll(async () => {
  const idpPort = await freePort();
  issuer = `http://127.0.0.1:${idpPort}`;
  cfg = await testConfig({
    OIDC_ISSUER_URL: issuer,
    OIDC_CLIENT_ID: 'plana-test',
    OIDC_CLIENT_SECRET: 'plana-test-client-secret-0000000000',
  });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'plana-test',
        client_secret: 'plana-test-client-secret-0000000000',
        redirect_uris: [`${cfg.API_PUBLIC_URL}/api/auth/oidc/callback`],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    // the dev login page takes any login: we use it as the e-mail; "unverified…" ones are not verified
    async findAccount(_ctx: unknown, id: string) {
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: id, email_verified: !id.startsWith('unverified') }),
      };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    cookies: { keys: ['oidc-test-cookie-key'] },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
  });
  idp = provider.listen(idpPort);
  pool = createPool(cfg.DATABASE_URL, 2);
  api = await startApi(cfg);
});

afterAll(async () => {
  await api?.close();
  await new Promise((r) => idp?.close(r));
  await pool?.end();
});

/** The whole dance: start → provider login as `login` → consent → back at the callback. */
async function oidcLogin(browser: Browser, login: string, start = '/api/auth/oidc/start') {
  const loginPage = await browser.request(`${cfg.API_PUBLIC_URL}${start}`);
  expect(loginPage.url.startsWith(`${issuer}/interaction/`)).toBe(true);
  const consentPage = await browser.submit(loginPage, { login, password: 'anything' });
  expect(consentPage.url.startsWith(`${issuer}/interaction/`)).toBe(true);
  return browser.submit(consentPage, {});
}

describe('GET /api/auth/oidc/start', () => {
  it('redirects to the provider with an authorization code request using PKCE (S256), state and nonce', async () => {
    const res = await fetch(`${cfg.API_PUBLIC_URL}/api/auth/oidc/start`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/auth`);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'plana-test',
      redirect_uri: `${cfg.API_PUBLIC_URL}/api/auth/oidc/callback`,
      code_challenge_method: 'S256',
      scope: 'openid email profile',
    });
    for (const p of ['code_challenge', 'state', 'nonce']) expect(location.searchParams.get(p)).toMatch(/\S{20,}/);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('plana_oidc='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    // the PKCE verifier is sealed, not readable in the cookie
    expect(cookie).not.toContain(location.searchParams.get('state')!);
  });
});

describe('GET /api/auth/oidc/callback', () => {
  it('logs in the platform user with the verified e-mail: access token, refresh cookie, /me works', async () => {
    const ws = await addWorkspace(pool);
    const user = await addUser(pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const browser = new Browser();
    const { url, res } = await oidcLogin(browser, user.email.toUpperCase());
    expect(url.startsWith(`${cfg.API_PUBLIC_URL}/api/auth/oidc/callback?`)).toBe(true);
    expect(res.status).toBe(200);
    const session = await res.json();
    expect(session.user).toEqual({ id: user.id, email: user.email, name: 'Test User' });
    expect(browser.cookie('127.0.0.1', 'plana_refresh')).toBeTruthy();
    expect(browser.cookie('127.0.0.1', 'plana_oidc')).toBeUndefined();
    const me = await call(cfg.API_PUBLIC_URL, 'GET', '/api/auth/me', { token: session.accessToken });
    expect(me.body.workspaces).toEqual([expect.objectContaining({ slug: ws.slug, role: 'admin' })]);
  });

  it('started from the portal, ends in the portal signed in by the refresh cookie, with no token in the URL', async () => {
    const ws = await addWorkspace(pool);
    const user = await addUser(pool, [{ workspaceId: ws.id, role: 'member' }]);
    const browser = new Browser();
    const { url } = await oidcLogin(browser, user.email, '/api/auth/oidc/start?portal=true');
    expect(url).toBe(`${cfg.API_PUBLIC_URL}/app/`);
    const cookie = browser.cookie('127.0.0.1', 'plana_refresh')!;
    expect(cookie).toBeTruthy();
    // what the portal does on load
    const refreshed = await call(cfg.API_PUBLIC_URL, 'POST', '/api/auth/refresh', {
      cookie: `plana_refresh=${cookie}`,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.user.email).toBe(user.email);
  });

  it('started from a workspace of the portal, ends in that workspace', async () => {
    const ws = await addWorkspace(pool);
    const user = await addUser(pool, [{ workspaceId: ws.id, role: 'member' }]);
    const { url } = await oidcLogin(new Browser(), user.email, `/api/auth/oidc/start?portal=true&workspace=${ws.slug}`);
    expect(url).toBe(`${cfg.API_PUBLIC_URL}/app/w/${ws.slug}/`);
    // nothing but a workspace slug goes into the redirect
    const res = await fetch(
      `${cfg.API_PUBLIC_URL}/api/auth/oidc/start?portal=true&workspace=${encodeURIComponent('//evil.example/')}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('refuses an e-mail the provider does not say is verified (403) and issues no session', async () => {
    const ws = await addWorkspace(pool);
    const { rows } = await pool.query<{ id: string }>("INSERT INTO users (email, name) VALUES ($1, 'U') RETURNING id", [
      `unverified-${ws.slug}@example.test`,
    ]);
    await pool.query("INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')", [
      rows[0]!.id,
      ws.id,
    ]);
    const browser = new Browser();
    const { res } = await oidcLogin(browser, `unverified-${ws.slug}@example.test`);
    expect(res.status).toBe(403);
    expect((await res.json()).detail).toContain('verified e-mail');
    expect(browser.cookie('127.0.0.1', 'plana_refresh')).toBeUndefined();
  });

  it('refuses a verified e-mail that has no platform account (403)', async () => {
    const { res } = await oidcLogin(new Browser(), 'stranger@example.test');
    expect(res.status).toBe(403);
    expect((await res.json()).detail).toContain('No platform account');
  });

  it('refuses a callback whose state does not match the login started in this browser (401)', async () => {
    const ws = await addWorkspace(pool);
    const user = await addUser(pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const victim = new Browser();
    await victim.request(`${cfg.API_PUBLIC_URL}/api/auth/oidc/start`, { stopBefore: issuer });
    // the attacker logs in at the provider in their own browser and keeps their callback URL …
    const attacker = new Browser();
    const loginPage = await attacker.request(`${cfg.API_PUBLIC_URL}/api/auth/oidc/start`);
    const consentPage = await attacker.submit(loginPage, { login: user.email, password: 'x' });
    const callback = await attacker.submit(consentPage, {}, `${cfg.API_PUBLIC_URL}/api/auth/oidc/callback`);
    expect(new URL(callback.url).searchParams.get('code')).toBeTruthy();
    // … and makes the victim's browser open it: the state does not match the victim's login
    const replayed = await victim.request(callback.url);
    expect(replayed.res.status).toBe(401);
    expect(victim.cookie('127.0.0.1', 'plana_refresh')).toBeUndefined();
  });

  it('refuses an ID token whose nonce is not the one this login sent (401), though state and PKCE match', async () => {
    const ws = await addWorkspace(pool);
    const user = await addUser(pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const browser = new Browser();
    const authorize = new URL(
      (await browser.request(`${cfg.API_PUBLIC_URL}/api/auth/oidc/start`, { stopBefore: issuer })).url,
    );
    // the authorization request reaches the provider with another nonce, which its ID token then carries
    authorize.searchParams.set('nonce', `${authorize.searchParams.get('nonce')}-other`);
    const loginPage = await browser.request(authorize.toString());
    expect(loginPage.url.startsWith(`${issuer}/interaction/`)).toBe(true);
    const consentPage = await browser.submit(loginPage, { login: user.email, password: 'x' });
    const callback = await browser.submit(consentPage, {}, `${cfg.API_PUBLIC_URL}/api/auth/oidc/callback`);
    expect(new URL(callback.url).searchParams.get('code')).toBeTruthy();
    const back = await browser.request(callback.url);
    expect(back.res.status).toBe(401);
    expect(await back.res.json()).toMatchObject({ detail: 'The identity provider did not confirm this login.' });
    expect(browser.cookie('127.0.0.1', 'plana_refresh')).toBeUndefined();
  });

  it.each([
    ['no login in progress (no state cookie)', undefined],
    ['a forged state cookie', 'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..AAAA.BBBB.CCCC'],
  ])('answers 400 for %s', async (_label, cookie) => {
    const res = await call(cfg.API_PUBLIC_URL, 'GET', '/api/auth/oidc/callback?code=x&state=y', {
      cookie: cookie ? `plana_oidc=${cookie}` : undefined,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('without an identity provider configured', () => {
  it('answers 404 on both OIDC routes to an API client; the sign-in page offers no organisation sign-in and says why a browser came back', async () => {
    const plain = await startApi(await testConfig());
    try {
      const base = plain.app.deps.config.API_PUBLIC_URL;
      const start = await call(base, 'GET', '/api/auth/oidc/start');
      expect(start.status).toBe(404);
      expect(start.headers.get('content-type')).toContain('application/problem+json');
      expect((await call(base, 'GET', '/api/auth/oidc/callback?code=x')).status).toBe(404);
      expect((await call(base, 'GET', '/api/auth/methods')).body).toEqual({ password: true, oidc: false });
      // the portal's link (an old bookmark): back to the sign-in page, never a raw problem in the browser
      for (const [query, page] of [
        ['portal=true', '/app/'],
        ['portal=true&workspace=acme', '/app/w/acme/'],
      ] as const) {
        const res = await fetch(new URL(`/api/auth/oidc/start?${query}`, base), { redirect: 'manual' });
        expect(res.status).toBe(303);
        expect(res.headers.get('location')).toBe(`${page}?oidc=not-configured`);
      }
    } finally {
      await plain.close();
    }
  });
});

describe('with an identity provider configured', () => {
  it('the sign-in page offers the organisation sign-in', async () => {
    expect((await call(cfg.API_PUBLIC_URL, 'GET', '/api/auth/methods')).body).toEqual({ password: true, oidc: true });
  });

  it('the provider unreachable: the portal goes back to its sign-in page, which says so; an API client gets 502', async () => {
    const down = await startApi(await testConfig({ OIDC_ISSUER_URL: `http://127.0.0.1:${await freePort()}` }));
    try {
      const base = down.app.deps.config.API_PUBLIC_URL;
      const res = await fetch(new URL('/api/auth/oidc/start?portal=true', base), { redirect: 'manual' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/app/?oidc=unreachable');
      expect((await call(base, 'GET', '/api/auth/oidc/start')).status).toBe(502);
    } finally {
      await down.close();
    }
  });
});
