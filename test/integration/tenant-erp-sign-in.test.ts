/**
 * Provisioning wires each tenant's ERP to the platform's OpenID provider (the `erpSignIn` resource):
 * its client at the provider (redirect URI = the tenant's `/auth_oauth/signin`), the ERP's
 * `auth.oauth.provider`, and the workspace members' ERP users (admins with settings rights, members
 * as internal users; a removed member archived, their ERP session ended). With the provider down
 * the tenant still turns Ready, the resource says what is missing, and the next reconcile makes it.
 * Real Temporal, PostgreSQL, auth service and ERP stand-in; a browser resolving the tenant's host.
 */
import bcrypt from 'bcrypt';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminSession, erpApiUserDeps } from '../../domain/erp/admin-session.js';
import { ODOO_SIGN_IN_MODULE } from '../../domain/erp/odoo-bin.js';
import { templateDatabaseName } from '../../domain/erp/tenant-database.js';
import { oidcProviderIssuer } from '../../domain/identity/oidc-clients.js';
import { ERP_INVITATION_SCOPE, ERP_PROVIDER_BUTTON } from '../../domain/identity/erp-sign-in.js';
import { Browser, linkTo } from '../support/http-browser.js';
import { addUser, call } from '../support/workspace-api.js';
import { queryTenantDb } from '../support/erp-tenant.js';
import {
  applyTenant,
  condition,
  isReady,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let p: TenantPlatform;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  p = await startTenantPlatform();
});
afterAll(async () => {
  await p?.close();
});

const baseUrl = (name: string) => `http://${name}.${p.cfg.TENANT_DOMAIN}:${new URL(p.erpUrl).port}`;
const decode = (s: string) => s.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c)));

/** Through the ERP's login page and the provider's; where the ERP lands the browser. */
async function signIn(b: Browser, name: string, email: string) {
  const page = await b.request(`${baseUrl(name)}/web/login`);
  const html = await page.res.text();
  const link = new RegExp(`href="([^"]+)"><i class="[^"]*"></i> ${ERP_PROVIDER_BUTTON}`).exec(html)?.[1];
  if (!link) throw new Error(`no provider link on ${page.url}`);
  const next = await b.request(decode(link));
  if (!next.url.startsWith(`${oidcProviderIssuer(p.cfg)}/interaction/`)) return next;
  return b.submit(next, { email, password: PASSWORD });
}

/** Applies the tenant again with another owner name: a new generation, reconciled. */
async function reconcileAgain(name: string, generation: number) {
  await applyTenant(p, name, { ownerName: `Owner ${generation}` });
  return waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === generation);
}

async function workspaceOf(name: string) {
  const { rows } = await p.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM tenants WHERE name = $1', [
    name,
  ]);
  return rows[0]!.workspace_id;
}

describe('the erpSignIn resource', () => {
  it("is the ERP's client at the provider and its provider record; members become ERP users, removed ones are archived", async () => {
    const name = uniqueTenant('signin');
    await applyTenant(p, name);
    const ready = await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    expect(ready.resources.erpSignIn).toMatchObject({ synced: 'True', externalName: `erp-${name}` });
    const client = await p.pool.query('SELECT redirect_uri FROM oidc_clients WHERE tenant = $1', [name]);
    expect(client.rows).toEqual([{ redirect_uri: `${baseUrl(name)}/auth_oauth/signin` }]);

    // the workspace exists once the tenant is Ready (client.provisioned); its members get ERP users next reconcile
    await expect.poll(() => workspaceOf(name), { timeout: 20_000 }).toBeTruthy();
    const workspaceId = await workspaceOf(name);
    const admin = await addUser(p.pool, [{ workspaceId, role: 'admin' }], PASSWORD);
    const member = await addUser(p.pool, [{ workspaceId, role: 'member' }], PASSWORD);
    await reconcileAgain(name, 2);
    const users = await queryTenantDb<{ login: string; active: boolean; system: boolean }>(
      { ...p.cfg },
      `${name}.${p.cfg.TENANT_DOMAIN}`,
      `SELECT u.login, u.active, EXISTS (SELECT 1 FROM res_groups_users_rel r JOIN ir_model_data d
          ON d.res_id = r.gid AND d.model = 'res.groups' AND d.module = 'base' AND d.name = 'group_system'
          WHERE r.uid = u.id) AS system
         FROM res_users u WHERE u.oauth_uid IS NOT NULL ORDER BY u.login`,
    );
    expect(users).toEqual(
      [
        // the owner: the workspace's first admin (the welcome flow made their account)
        { login: `owner@${name}.test`, active: true, system: true },
        { login: admin.email, active: true, system: true },
        { login: member.email, active: true, system: false },
      ].sort((a, b) => a.login.localeCompare(b.login)),
    );

    const b = new Browser({ localDomain: p.cfg.TENANT_DOMAIN });
    const landed = await signIn(b, name, member.email);
    expect(landed.url).toBe(`${baseUrl(name)}/web`);
    expect(await landed.res.text()).toContain('o_user_menu');

    await p.pool.query('DELETE FROM memberships WHERE user_id = $1', [member.id]);
    await reconcileAgain(name, 3);
    expect((await b.request(`${baseUrl(name)}/odoo`)).url).toBe(`${baseUrl(name)}/web/login?redirect=%2Fodoo%3F`);
    // no longer a member: the provider refuses them (access_denied), so the ERP's code exchange fails
    expect((await signIn(b, name, member.email)).url).toBe(`${baseUrl(name)}/web/login?oauth_error=2`);
  });

  it('with the provider down the tenant turns Ready, the resource says what is missing, the next reconcile makes it', async () => {
    const name = uniqueTenant('nosignin');
    await p.stopAuth();
    try {
      await applyTenant(p, name);
      const ready = await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Failed');
      expect(ready.resources.erpSignIn).toMatchObject({ synced: 'False', state: 'Failed' });
      expect(ready.resources.erpSignIn.message).toContain('does not answer');
      expect(condition(ready, 'Synced')).toMatchObject({ status: 'True' });
      expect(condition(ready, 'Synced')?.message).toContain('erpSignIn failed (non-fatal');
      const none = await p.pool.query('SELECT 1 FROM oidc_clients WHERE tenant = $1', [name]);
      expect(none.rowCount).toBe(0);
    } finally {
      await p.startAuth();
    }
    const again = await reconcileAgain(name, 2);
    expect(again.resources.erpSignIn).toMatchObject({ synced: 'True', state: 'Created', externalName: `erp-${name}` });
    expect(condition(again, 'Synced')?.message).toBe('');
  });
});

describe("the ERP's sign-up scope", () => {
  it('every reconcile sets it back to b2b; with b2c a non-member still gets no ERP user, the provider refuses them first', async () => {
    const name = uniqueTenant('scope');
    const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    await expect.poll(() => workspaceOf(name), { timeout: 20_000 }).toBeTruthy();
    const member = await addUser(p.pool, [{ workspaceId: await workspaceOf(name), role: 'member' }], PASSWORD);
    await reconcileAgain(name, 2);
    await p.pool.query('DELETE FROM memberships WHERE user_id = $1', [member.id]);
    await reconcileAgain(name, 3);
    // people with a platform account who are not members of this workspace
    const other = await p.pool.query<{ id: string }>(
      "INSERT INTO workspaces (slug, name) VALUES ($1, 'Other') RETURNING id",
      [uniqueTenant('other')],
    );
    const [stranger, another] = [
      await addUser(p.pool, [{ workspaceId: other.rows[0]!.id, role: 'admin' }], PASSWORD),
      await addUser(p.pool, [{ workspaceId: other.rows[0]!.id, role: 'member' }], PASSWORD),
    ];
    const erpUsers = (uid: string) =>
      queryTenantDb<{ active: boolean }>(p.cfg, host, 'SELECT active FROM res_users WHERE oauth_uid = $1 ORDER BY id', [
        uid,
      ]).then((rows) => rows.map((u) => u.active));

    // an ERP administrator opens sign-up to everyone (Settings › Customer Account: free sign up)
    const { session } = await adminSession(erpApiUserDeps(p.cfg, p.pool), host);
    const [param] = await session.callKw<{ id: number }[]>('ir.config_parameter', 'search_read', [
      [['key', '=', ERP_INVITATION_SCOPE.key]],
    ]);
    if (param) await session.callKw('ir.config_parameter', 'write', [[param.id], { value: 'b2c' }]);
    else await session.callKw('ir.config_parameter', 'create', [{ key: ERP_INVITATION_SCOPE.key, value: 'b2c' }]);
    // even with b2c no code for this ERP reaches a non-member: the provider refuses them
    // (access_denied), so Odoo never gets to sign them up; nor the removed member
    for (const outsider of [stranger, member]) {
      const landed = await signIn(new Browser({ localDomain: p.cfg.TENANT_DOMAIN }), name, outsider.email);
      expect(landed.url).toBe(`${baseUrl(name)}/web/login?oauth_error=2`);
    }
    expect(await erpUsers(stranger.id)).toEqual([]);
    expect(await erpUsers(member.id)).toEqual([false]);

    // and the reconcile pins b2b again (what keeps Odoo from making users of its own)
    const ready = await reconcileAgain(name, 4);
    const refused = await signIn(new Browser({ localDomain: p.cfg.TENANT_DOMAIN }), name, another.email);
    expect(refused.url).toBe(`${baseUrl(name)}/web/login?oauth_error=2`);
    expect(await erpUsers(another.id)).toEqual([]);
    expect(ready.steps.filter((s) => s.step === 'ensure-erp-sign-in').at(-1)?.message).toContain(
      'sign-up scope b2b (was b2c)',
    );
    expect(
      await queryTenantDb(p.cfg, host, 'SELECT value FROM ir_config_parameter WHERE key = $1', [
        ERP_INVITATION_SCOPE.key,
      ]),
    ).toEqual([{ value: 'b2b' }]);
  });
});

describe('a tenant whose ERP lacks the sign-in module', () => {
  it('cloned from a template made before the module was part of it: the reconcile installs the module and members sign in', async () => {
    const name = uniqueTenant('oldtpl');
    const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
    // the tenant database as a clone of an older template: Odoo does not list auth_oidc (no auth.oauth.provider)
    const admin = new pg.Client({ connectionString: p.cfg.ERP_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(
        `CREATE DATABASE ${pg.escapeIdentifier(host)} TEMPLATE ${pg.escapeIdentifier(templateDatabaseName('starter', '18'))}`,
      );
    } finally {
      await admin.end();
    }
    await queryTenantDb(p.cfg, host, 'DELETE FROM ir_module_module WHERE name = $1', [ODOO_SIGN_IN_MODULE]);
    await queryTenantDb(p.cfg, host, "DELETE FROM ir_model_fields WHERE model = 'auth.oauth.provider'");
    await queryTenantDb(p.cfg, host, "DELETE FROM ir_model WHERE model = 'auth.oauth.provider'");

    await applyTenant(p, name);
    const ready = await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state !== 'Pending');
    expect(ready.resources.erpSignIn).toMatchObject({ synced: 'True', state: 'Created', externalName: `erp-${name}` });
    expect(ready.steps.filter((s) => s.step === 'ensure-erp-sign-in').at(-1)?.message).toContain(
      'sign-in module installed',
    );
    const modules = await queryTenantDb(p.cfg, host, 'SELECT state FROM ir_module_module WHERE name = $1', [
      ODOO_SIGN_IN_MODULE,
    ]);
    expect(modules).toEqual([{ state: 'installed' }]);
    // the owner's account exists once the tenant is Ready (client.provisioned): their ERP user comes next reconcile
    await expect.poll(() => workspaceOf(name), { timeout: 20_000 }).toBeTruthy();
    await reconcileAgain(name, 2);

    // the owner signs in to the ERP through the provider
    await p.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [
      `owner@${name}.test`,
      await bcrypt.hash(PASSWORD, 4),
    ]);
    const landed = await signIn(new Browser({ localDomain: p.cfg.TENANT_DOMAIN }), name, `owner@${name}.test`);
    expect(landed.url).toBe(`${baseUrl(name)}/web`);
    expect(await landed.res.text()).toContain(`data-login="owner@${name}.test"`);
  });

  it('the ERP stand-in answers as Odoo 18 without the module: call_kw on its model is 404 Not Found, no provider link, /auth_oauth/signin 404', async () => {
    const name = uniqueTenant('nomodule');
    const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    await queryTenantDb(p.cfg, host, "UPDATE ir_module_module SET state = 'uninstalled' WHERE name = $1", [
      ODOO_SIGN_IN_MODULE,
    ]);
    const deps = erpApiUserDeps(p.cfg, p.pool);
    const { session } = await adminSession(deps, host);
    await expect(session.callKw('auth.oauth.provider', 'search_read', [[]], { fields: ['id'] })).rejects.toThrow(
      'werkzeug.exceptions.NotFound: 404 Not Found',
    );
    const page = await new Browser({ localDomain: p.cfg.TENANT_DOMAIN }).request(`${baseUrl(name)}/web/login`);
    expect(await page.res.text()).not.toContain(ERP_PROVIDER_BUTTON);
    const signin = await new Browser({ localDomain: p.cfg.TENANT_DOMAIN }).request(
      `${baseUrl(name)}/auth_oauth/signin?state=%7B%7D`,
    );
    expect(signin.res.status).toBe(404);
  });
});

describe('Open ERP from the portal', () => {
  it('signs a member who joined since the last reconcile in to their ERP without a second password; the link works once', async () => {
    const name = uniqueTenant('open');
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    await expect.poll(() => workspaceOf(name), { timeout: 20_000 }).toBeTruthy();
    const workspaceId = await workspaceOf(name);
    // no reconcile since they joined: Open ERP makes their ERP user itself
    const admin = await addUser(p.pool, [{ workspaceId, role: 'admin' }], PASSWORD);
    const slug = (await p.pool.query<{ slug: string }>('SELECT slug FROM workspaces WHERE id = $1', [workspaceId]))
      .rows[0]!.slug;
    const login = await call(p.cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', {
      body: { email: admin.email, password: PASSWORD },
    });
    const opened = await call(p.cfg.API_PUBLIC_URL, 'POST', `/api/portal/erp/sign-in?workspace=${slug}`, {
      token: login.body.accessToken,
    });
    expect(opened.status).toBe(200);
    expect(opened.body.erpUrl).toBe(`${baseUrl(name)}/web`);

    // the link goes through the provider (no password asked) and the ERP's own sign-in, as its
    // "Sign in with Plana" would, straight into the ERP's web client: no form or click of the ERP's
    const b = new Browser({ localDomain: p.cfg.TENANT_DOMAIN });
    const hops: string[] = [];
    const landed = await b.request(opened.body.url, { onRedirect: (url) => hops.push(url) });
    expect(landed.url).toBe(`${baseUrl(name)}/web`);
    expect(await landed.res.text()).toContain(`data-login="${admin.email}"`);
    const issuer = oidcProviderIssuer(p.cfg);
    const erpHops = hops.filter((url) => !url.startsWith(issuer)).map((url) => new URL(url).pathname);
    expect(erpHops).toEqual(['/auth_oauth/signin', '/web']);
    // the state is the one the ERP's login page would have put in its link: the database, provider and redirect
    const authorize = new URL(hops.find((url) => url.startsWith(`${issuer}/authorize`))!);
    const page = await new Browser({ localDomain: p.cfg.TENANT_DOMAIN }).request(`${baseUrl(name)}/web/login`);
    const loginHtml = await page.res.text();
    const button = new URL(linkTo(loginHtml, ERP_PROVIDER_BUTTON)!);
    for (const param of ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge'])
      expect([param, authorize.searchParams.get(param)]).toEqual([param, button.searchParams.get(param)]);

    // the ERP's login page itself is unchanged: its password form for the ERP's own admin, and the button
    expect(page.res.status).toBe(200);
    expect(loginHtml).toMatch(/<input type="password" name="password"/);

    const again = await new Browser().request(opened.body.url);
    expect(again.res.status).toBe(400);
    expect(await again.res.text()).toContain('expired or was already used');
  });

  it('with the provider down, Open ERP answers 503 saying so instead of a link the browser could not follow', async () => {
    const name = uniqueTenant('openoff');
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    await expect.poll(() => workspaceOf(name), { timeout: 20_000 }).toBeTruthy();
    const workspaceId = await workspaceOf(name);
    const member = await addUser(p.pool, [{ workspaceId, role: 'member' }], PASSWORD);
    const slug = (await p.pool.query<{ slug: string }>('SELECT slug FROM workspaces WHERE id = $1', [workspaceId]))
      .rows[0]!.slug;
    const login = await call(p.cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', {
      body: { email: member.email, password: PASSWORD },
    });
    const open = () =>
      call(p.cfg.API_PUBLIC_URL, 'POST', `/api/portal/erp/sign-in?workspace=${slug}`, {
        token: login.body.accessToken,
      });
    await p.stopAuth();
    try {
      const refused = await open();
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({
        status: 503,
        detail: "The platform's sign-in service does not answer; try again in a minute.",
      });
      expect(refused.body.url).toBeUndefined();
    } finally {
      await p.startAuth();
    }
    expect((await open()).status).toBe(200);
  });

  it('without the hand-off the provider asks for the password; a workspace without an ERP gets 404', async () => {
    const name = uniqueTenant('nohandoff');
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.resources.erpSignIn?.state === 'Created');
    const b = new Browser({ localDomain: p.cfg.TENANT_DOMAIN });
    const page = await b.request(`${baseUrl(name)}/web/login`);
    const link = new RegExp(`href="([^"]+)"><i class="[^"]*"></i> ${ERP_PROVIDER_BUTTON}`).exec(
      await page.res.text(),
    )![1]!;
    const provider = await b.request(decode(link));
    expect(provider.url.startsWith(`${oidcProviderIssuer(p.cfg)}/interaction/`)).toBe(true);
    expect(await provider.res.text()).toContain('type="password"');

    const ws = await p.pool.query<{ id: string; slug: string }>(
      "INSERT INTO workspaces (slug, name) VALUES ($1, 'No ERP') RETURNING id, slug",
      [uniqueTenant('noerp')],
    );
    const user = await addUser(p.pool, [{ workspaceId: ws.rows[0]!.id, role: 'member' }], PASSWORD);
    const login = await call(p.cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', {
      body: { email: user.email, password: PASSWORD },
    });
    const res = await call(p.cfg.API_PUBLIC_URL, 'POST', `/api/portal/erp/sign-in?workspace=${ws.rows[0]!.slug}`, {
      token: login.body.accessToken,
    });
    expect(res.status).toBe(404);
    expect(res.body.detail).toBe('This workspace has no ERP yet.');
  });
});
