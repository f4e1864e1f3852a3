/**
 * A tenant's ERP (the stand-in) signs people in through the platform's OpenID provider as Odoo 18
 * with auth_oauth and OCA's auth_oidc does: the login page's provider link, the provider's login,
 * `/auth_oauth/signin` (code exchange with PKCE, ID token checked with the JWKS, the user matched by
 * `oauth_uid`), the session cookie and the web client; and Odoo's answers to what goes wrong.
 * Real HTTP throughout: the auth service, the stand-in and a browser resolving the tenant's host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuth } from '../../services/auth/server.js';
import { adminSession, erpApiUserDeps } from '../../domain/erp/admin-session.js';
import { ensureErpSignInProvider, ERP_PROVIDER_BUTTON } from '../../domain/identity/erp-sign-in.js';
import { ensureTenantClient, erpRedirectUri, oidcProviderIssuer } from '../../domain/identity/oidc-clients.js';
import { freePort } from '../../scripts/local-servers.js';
import { startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';
import { Browser } from '../support/http-browser.js';
import { addUser } from '../support/workspace-api.js';

let bed: ErpTestBed;
let auth: Awaited<ReturnType<typeof startAuth>>;
let tenant: TestTenant;
let baseUrl: string;
let providerId: number;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  const port = await freePort();
  bed = await startErpTestBed({ settings: { AUTH_PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}` } });
  auth = await startAuth(bed.cfg);
  tenant = await bed.provision({ tier: 'starter', version: '18' });
  baseUrl = `http://${tenant.host}:${new URL(bed.erp.url).port}`;
  const client = await ensureTenantClient(bed.pool, bed.cfg.SECRETS_KEY, tenant.name, erpRedirectUri(baseUrl));
  ({ providerId } = await ensureErpSignInProvider(
    erpApiUserDeps(bed.cfg, bed.pool, bed.erp.url),
    tenant.database,
    oidcProviderIssuer(bed.cfg),
    client,
  ));
}, 60_000);
afterAll(async () => {
  await auth?.close();
  await bed?.close();
});

/**
 * A member of the tenant's workspace (unless `member` is false), and (unless `inErp` is false) its
 * ERP user linked by oauth_uid.
 */
async function person(inErp = true, member = true) {
  const { rows } = await bed.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM tenants WHERE name = $1', [
    tenant.name,
  ]);
  const user = await addUser(
    bed.pool,
    member ? [{ workspaceId: rows[0]!.workspace_id, role: 'member' }] : [],
    PASSWORD,
  );
  let erpUserId: number | undefined;
  if (inErp) {
    const { session } = await adminSession(erpApiUserDeps(bed.cfg, bed.pool, bed.erp.url), tenant.database);
    erpUserId = await session.callKw<number>('res.users', 'create', [
      { name: `Owner ${user.id.slice(0, 4)}`, login: user.email, oauth_uid: user.id, oauth_provider_id: providerId },
    ]);
  }
  return { ...user, erpUserId, name: `Owner ${user.id.slice(0, 4)}` };
}

const browser = () => new Browser({ localDomain: bed.cfg.TENANT_DOMAIN });
const decode = (s: string) => s.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c)));

/** The login page's link to the platform's provider. */
async function providerLink(b: Browser, path = '/web/login') {
  const page = await b.request(`${baseUrl}${path}`);
  const html = await page.res.text();
  const link = new RegExp(`href="([^"]+)"><i class="[^"]*"></i> ${ERP_PROVIDER_BUTTON}`).exec(html)?.[1];
  if (!link) throw new Error(`no provider link on ${page.url}: ${html}`);
  return decode(link);
}

/** Follows the link, signs in at the provider (unless its session is still open), and lands where the ERP sends the browser. */
async function signIn(b: Browser, who: { email: string }, path?: string) {
  const page = await b.request(await providerLink(b, path));
  if (!page.url.startsWith(`${oidcProviderIssuer(bed.cfg)}/interaction/`)) return page;
  return b.submit(page, { email: who.email, password: PASSWORD });
}

describe('the login page', () => {
  it("links the platform's provider as auth_oidc does: code flow, PKCE, nonce, Odoo's JSON state", async () => {
    const link = new URL(await providerLink(browser()));
    expect(`${link.origin}${link.pathname}`).toBe(`${oidcProviderIssuer(bed.cfg)}/authorize/`);
    const params = Object.fromEntries(link.searchParams);
    expect(params).toMatchObject({
      response_type: 'code',
      client_id: `erp-${tenant.name}`,
      redirect_uri: `${baseUrl}/auth_oauth/signin`,
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(JSON.parse(params.state!)).toEqual({
      d: tenant.database,
      p: providerId,
      r: encodeURIComponent(`${baseUrl}/web`),
    });
    expect(params.nonce).toMatch(/^\S{20,}$/);
    expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('/auth_oauth/signin', () => {
  it('signs the ERP user in: session cookie, back where they were going, the web client names them', async () => {
    const owner = await person();
    const b = browser();
    const start = await b.request(`${baseUrl}/odoo`);
    expect(start.url).toBe(`${baseUrl}/web/login?redirect=%2Fodoo%3F`);
    const landed = await signIn(b, owner, '/web/login?redirect=%2Fodoo%3F');
    expect(landed.url).toBe(`${baseUrl}/odoo?`);
    expect(landed.res.status).toBe(200);
    expect(await landed.res.text()).toContain(`>${owner.name}</span>`);
    expect(b.cookie(tenant.host, 'session_id')).toBeTruthy();
  });

  it("an account that is not a member of the tenant's workspace: the provider answers access_denied, the ERP its login page with oauth_error=2, no session", async () => {
    const outsider = await person(true, false);
    const b = browser();
    const page = await b.request(await providerLink(b));
    const refused = await b.submit(page, { email: outsider.email, password: PASSWORD }, `${baseUrl}/auth_oauth/signin`);
    const callback = new URL(refused.url);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('code')).toBeNull();
    const landed = await b.request(refused.url);
    expect(landed.url).toBe(`${baseUrl}/web/login?oauth_error=2`);
    expect(await landed.res.text()).toContain('Access Denied');
    expect(b.cookie(tenant.host, 'session_id')).toBeUndefined();
  });

  it('a member without an ERP user (joined since the last reconcile): back to the login page with oauth_error=3 and its message', async () => {
    const stranger = await person(false);
    const b = browser();
    const landed = await signIn(b, stranger);
    expect(landed.url).toBe(`${baseUrl}/web/login?oauth_error=3`);
    expect(await landed.res.text()).toContain('You do not have access to this database');
    expect(b.cookie(tenant.host, 'session_id')).toBeUndefined();
  });

  it('an archived ERP user: the open session ends, and signing in again is refused', async () => {
    const member = await person();
    const b = browser();
    expect((await signIn(b, member)).url).toBe(`${baseUrl}/web`);
    const { session } = await adminSession(erpApiUserDeps(bed.cfg, bed.pool, bed.erp.url), tenant.database);
    await session.callKw('res.users', 'write', [[member.erpUserId], { active: false }]);
    expect((await b.request(`${baseUrl}/odoo`)).url).toBe(`${baseUrl}/web/login?redirect=%2Fodoo%3F`);
    expect((await signIn(b, member)).url).toBe(`${baseUrl}/web/login?oauth_error=3`);
  });

  it('a code used twice, or a state naming another provider: oauth_error=2 (Access Denied), no session', async () => {
    const owner = await person();
    const b = browser();
    const login = await b.request(await providerLink(b));
    const callback = await b.submit(login, { email: owner.email, password: PASSWORD }, `${baseUrl}/auth_oauth/signin`);
    const first = await browser().request(callback.url);
    expect(first.url).toBe(`${baseUrl}/web`);
    const replay = await browser().request(callback.url);
    expect(replay.url).toBe(`${baseUrl}/web/login?oauth_error=2`);
    expect(await replay.res.text()).toContain('Access Denied');

    const url = new URL(callback.url);
    const state = JSON.parse(url.searchParams.get('state')!);
    url.searchParams.set('state', JSON.stringify({ ...state, p: providerId + 1000 }));
    expect((await browser().request(url.toString())).url).toBe(`${baseUrl}/web/login?oauth_error=2`);
  });

  it("a state for another database: 400; not JSON: 500; a POST: 400 (Odoo's CSRF check); no parameters: the fragment page", async () => {
    const signin = `${baseUrl}/auth_oauth/signin`;
    const b = browser();
    const other = await b.request(`${signin}?code=x&state=${encodeURIComponent(JSON.stringify({ d: 'other', p: 1 }))}`);
    expect(other.res.status).toBe(400);
    expect((await b.request(`${signin}?code=x&state=nope`)).res.status).toBe(500);
    expect((await b.request(signin, { method: 'POST', form: { code: 'x', state: '{}' } })).res.status).toBe(400);
    const fragment = await b.request(signin);
    expect(fragment.res.status).toBe(200);
    expect(await fragment.res.text()).toContain('l.hash.substring(1)');
  });

  it('the provider down at the code exchange: the login page with "Access Denied", no 5xx', async () => {
    const owner = await person();
    const b = browser();
    const login = await b.request(await providerLink(b));
    const callback = await b.submit(login, { email: owner.email, password: PASSWORD }, `${baseUrl}/auth_oauth/signin`);
    await auth.close();
    try {
      const landed = await b.request(callback.url);
      expect(landed.url).toBe(`${baseUrl}/web/login?oauth_error=2`);
      expect(landed.res.status).toBe(200);
      expect(await landed.res.text()).toContain('Access Denied');
    } finally {
      auth = await startAuth(bed.cfg);
    }
  });
});
