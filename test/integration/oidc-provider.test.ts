/**
 * The platform's own OpenID provider (auth service, `/application/o`), over real HTTP on the run's
 * PostgreSQL and Redis, with a certified relying-party library (openid-client) as a tenant's ERP
 * and the test as the person's browser: discovery at the specification's paths, the authorization
 * code flow with PKCE through the platform's login page, the ID token verified with the JWKS,
 * userinfo; refusals (wrong password, a person who is not a member of the ERP's workspace, a
 * redirect URI that is not the tenant's, unknown client); keys
 * kept across restarts and rotated with the old one still published, by one command
 * (`rotate-signing-key`) that the running auth service takes up.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuth } from '../../services/auth/server.js';
import { ensureTenantClient, erpRedirectUri, removeTenantClient } from '../../domain/identity/oidc-clients.js';
import { rotateSigningKey } from '../../domain/identity/signing-keys.js';
import { freePort } from '../../scripts/local-servers.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { Browser } from '../support/http-browser.js';
import { addUser } from '../support/workspace-api.js';
import { createWorkspaceWithTenant } from '../support/erp-tenant.js';
import { testKeys } from '../support/service-keys.js';

let api: TestApi;
let auth: Awaited<ReturnType<typeof startAuth>>;
let issuer: string;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  const port = await freePort();
  api = await startTestApi({ AUTH_PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}` });
  issuer = `http://127.0.0.1:${port}/application/o`;
  auth = await startAuth(api.cfg);
});
afterAll(async () => {
  await auth?.close();
  await api?.close();
});

/** A member of the ERP's workspace (the people the provider signs in to that ERP). */
async function someone(erp: { workspaceId: string }, role: 'admin' | 'member' = 'admin') {
  return addUser(api.pool, [{ workspaceId: erp.workspaceId, role }], PASSWORD);
}

/** A tenant's ERP as a relying party (its workspace and tenant rows): its client at the provider, discovered by openid-client. */
async function tenantErp() {
  const tenant = await createWorkspaceWithTenant(api.pool, { tier: 'starter', version: '18' });
  const { rows } = await api.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM tenants WHERE name = $1', [
    tenant,
  ]);
  const redirectUri = erpRedirectUri(`http://${tenant}.erp.plana.test`);
  const c = await ensureTenantClient(api.pool, api.cfg.SECRETS_KEY, tenant, redirectUri);
  const config = await client.discovery(
    new URL(issuer),
    c.clientId,
    undefined,
    client.ClientSecretBasic(c.clientSecret),
    {
      execute: [client.allowInsecureRequests],
    },
  );
  return { tenant, workspaceId: rows[0]!.workspace_id, redirectUri, config, clientId: c.clientId };
}

async function authorizationUrl(erp: Awaited<ReturnType<typeof tenantErp>>, redirectUri = erp.redirectUri) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(erp.config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url: url.toString(), verifier, state, nonce };
}

describe('discovery and JWKS', () => {
  it('publishes the specification paths and an RS256 signing key', async () => {
    const doc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
    expect(doc).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/authorize/`,
      token_endpoint: `${issuer}/token/`,
      userinfo_endpoint: `${issuer}/userinfo/`,
      jwks_uri: `${issuer}/jwks/`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    });
    const jwks = await (await fetch(`${issuer}/jwks/`)).json();
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0].d).toBeUndefined();
  });
});

describe('authorization code flow with PKCE', () => {
  it('signs the platform account in through the login page: code → ID token (JWKS) → userinfo', async () => {
    const erp = await tenantErp();
    const user = await someone(erp);
    const start = await authorizationUrl(erp);
    const browser = new Browser();
    const loginPage = await browser.request(start.url);
    expect(loginPage.url.startsWith(`${issuer}/interaction/`)).toBe(true);
    expect(loginPage.res.status).toBe(200);
    const back = await browser.submit(loginPage, { email: user.email, password: PASSWORD }, erp.redirectUri);
    const callback = new URL(back.url);
    expect(`${callback.origin}${callback.pathname}`).toBe(erp.redirectUri);
    expect(callback.searchParams.get('state')).toBe(start.state);

    const tokens = await client.authorizationCodeGrant(erp.config, callback, {
      pkceCodeVerifier: start.verifier,
      expectedState: start.state,
      expectedNonce: start.nonce,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ sub: user.id, aud: erp.clientId, iss: issuer });
    const info = await client.fetchUserInfo(erp.config, tokens.access_token, user.id);
    expect(info).toMatchObject({ sub: user.id, email: user.email });
  });

  it('a second authorization in the same browser needs no login (the provider session)', async () => {
    const erp = await tenantErp();
    const user = await someone(erp);
    const browser = new Browser();
    const first = await authorizationUrl(erp);
    await browser.submit(await browser.request(first.url), { email: user.email, password: PASSWORD }, erp.redirectUri);
    const second = await authorizationUrl(erp);
    const { url } = await browser.request(second.url, { stopBefore: erp.redirectUri });
    expect(new URL(url).searchParams.get('code')).toBeTruthy();
  });

  it("refuses a person who is not a member of the ERP's workspace: access_denied at the ERP's redirect URI, no code", async () => {
    const erp = await tenantErp();
    const other = await tenantErp();
    // an admin of another tenant's workspace, and an account of no workspace at all
    for (const outsider of [await someone(other), await addUser(api.pool, [], PASSWORD)]) {
      const start = await authorizationUrl(erp);
      const browser = new Browser();
      const page = await browser.request(start.url);
      const back = await browser.submit(page, { email: outsider.email, password: PASSWORD }, erp.redirectUri);
      const callback = new URL(back.url);
      expect(`${callback.origin}${callback.pathname}`).toBe(erp.redirectUri);
      expect(Object.fromEntries(callback.searchParams)).toEqual({
        error: 'access_denied',
        error_description: expect.stringContaining("not a member of this ERP's workspace"),
        state: start.state,
        iss: issuer,
      });
      // with the provider's session still open (signed in above), asking again is refused the same way
      const again = await authorizationUrl(erp);
      const { url } = await browser.request(again.url, { stopBefore: erp.redirectUri });
      expect(new URL(url).searchParams.get('error')).toBe('access_denied');
      expect(new URL(url).searchParams.get('code')).toBeNull();
    }
  });

  it("signs a member in to their own ERP, and refuses them another tenant's ERP in the same browser session", async () => {
    const own = await tenantErp();
    const other = await tenantErp();
    const member = await someone(own, 'member');
    const browser = new Browser();
    const first = await authorizationUrl(own);
    const back = await browser.submit(
      await browser.request(first.url),
      { email: member.email, password: PASSWORD },
      own.redirectUri,
    );
    expect(new URL(back.url).searchParams.get('code')).toBeTruthy();
    const foreign = await authorizationUrl(other);
    const { url } = await browser.request(foreign.url, { stopBefore: other.redirectUri });
    expect(`${new URL(url).origin}${new URL(url).pathname}`).toBe(other.redirectUri);
    expect(new URL(url).searchParams.get('error')).toBe('access_denied');
    expect(new URL(url).searchParams.get('code')).toBeNull();
    // and a removed member is refused from then on
    await api.pool.query('DELETE FROM memberships WHERE user_id = $1', [member.id]);
    const after = await browser.request((await authorizationUrl(own)).url, { stopBefore: own.redirectUri });
    expect(new URL(after.url).searchParams.get('error')).toBe('access_denied');
  });

  it('a wrong password shows the login page again with 401, and no code', async () => {
    const erp = await tenantErp();
    const user = await someone(erp);
    const browser = new Browser();
    const page = await browser.request((await authorizationUrl(erp)).url);
    const again = await browser.submit(page, { email: user.email, password: 'wrong' }, erp.redirectUri);
    expect(again.res.status).toBe(401);
    expect(await again.res.text()).toContain('The e-mail address or password is not correct.');
  });

  it('refuses a redirect URI that is not the tenant’s, without redirecting there', async () => {
    const erp = await tenantErp();
    const other = erpRedirectUri('http://evil.erp.plana.test');
    const res = await fetch((await authorizationUrl(erp, other)).url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('redirect_uri');
  });

  it('refuses a client that does not exist (a removed tenant) with a readable page', async () => {
    const erp = await tenantErp();
    const { url } = await authorizationUrl(erp);
    await removeTenantClient(api.pool, erp.tenant);
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Sign-in failed');
  });
});

describe('signing keys', () => {
  it('survive a restart, and a rotation publishes the new key beside the old one', async () => {
    const before = (await (await fetch(`${issuer}/jwks/`)).json()).keys.map((k: { kid: string }) => k.kid);
    await auth.close();
    auth = await startAuth(api.cfg);
    const afterRestart = (await (await fetch(`${issuer}/jwks/`)).json()).keys.map((k: { kid: string }) => k.kid);
    expect(afterRestart).toEqual(before);

    await rotateSigningKey(api.pool, api.cfg.SECRETS_KEY);
    await auth.close();
    auth = await startAuth(api.cfg);
    const rotated = (await (await fetch(`${issuer}/jwks/`)).json()).keys.map((k: { kid: string }) => k.kid);
    expect(rotated).toHaveLength(before.length + 1);
    expect(rotated.slice(1)).toEqual(before);

    const erp = await tenantErp();
    const user = await someone(erp);
    const start = await authorizationUrl(erp);
    const browser = new Browser();
    const back = await browser.submit(
      await browser.request(start.url),
      { email: user.email, password: PASSWORD },
      erp.redirectUri,
    );
    const tokens = await client.authorizationCodeGrant(erp.config, new URL(back.url), {
      pkceCodeVerifier: start.verifier,
      expectedState: start.state,
      expectedNonce: start.nonce,
    });
    const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString());
    expect(header).toMatchObject({ alg: 'RS256', kid: rotated[0] });
  });
});

/** `npm run cli -- <args>` as a real process against the test's account API, as an operator. */
async function cli(args: string[]) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const { stdout } = await promisify(execFile)(`${root}node_modules/.bin/tsx`, [`${root}cli/index.ts`, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, PLANA_API_URL: api.cfg.API_PUBLIC_URL, OPS_API_KEY: testKeys.operator },
  });
  return stdout;
}

describe('rotate-signing-key', () => {
  it('one command: the running auth service publishes the new key beside the old one and signs with it, no restart', async () => {
    const jwks = async () =>
      (await (await fetch(`${issuer}/jwks/`)).json()).keys.map((k: { kid: string }) => k.kid) as string[];
    const before = await jwks();
    const rotated = JSON.parse(await cli(['rotate-signing-key', '-o', 'json'])) as {
      kid: string;
      inUseWithinSeconds: number;
      keys: { kid: string; state: string; unpublishedAt: string | null }[];
    };
    expect(rotated.keys.map((k) => k.kid)).toEqual([rotated.kid, ...before]);
    expect(rotated.keys.map((k) => k.state)).toEqual(['signing', ...before.map(() => 'retired')]);
    expect(Date.parse(rotated.keys[1]!.unpublishedAt!)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    // the same auth service process: the JWKS has both within the refresh period
    await expect.poll(jwks, { timeout: (rotated.inUseWithinSeconds + 5) * 1000 }).toEqual([rotated.kid, ...before]);

    const erp = await tenantErp();
    const user = await someone(erp);
    const start = await authorizationUrl(erp);
    const browser = new Browser();
    const back = await browser.submit(
      await browser.request(start.url),
      { email: user.email, password: PASSWORD },
      erp.redirectUri,
    );
    const tokens = await client.authorizationCodeGrant(erp.config, new URL(back.url), {
      pkceCodeVerifier: start.verifier,
      expectedState: start.state,
      expectedNonce: start.nonce,
    });
    const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString());
    expect(header).toMatchObject({ alg: 'RS256', kid: rotated.kid });
    // and the listing says the same
    expect(await cli(['signing-keys'])).toMatch(new RegExp(`${rotated.kid}\\s+signing`));
  });
});
