/**
 * Real Odoo, one ERP version per run (`npm run test:odoo`): what the reconcile's ERP sign-in step repairs. A tenant
 * database without OCA's auth_oidc (cloned before the module was part of the template: Odoo
 * has no `auth.oauth.provider`; 18 and 19 answer 404 Not Found on it, 17 a KeyError) gets the module installed and its members sign
 * in; Odoo's sign-up scope set to 'b2c' lets no one else in (the platform's provider refuses anyone
 * outside the workspace before Odoo gets a code) and the next reconcile sets it back to 'b2b'. Real Temporal, PostgreSQL, auth service; the platform reaches
 * Odoo through the tenant ingress.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantAdminPassword } from '../../domain/erp/admin-session.js';
import { openErpSession, type ErpSession } from '../../domain/erp/client.js';
import { ODOO_SIGN_IN_MODULE, odooAddonsPathArg, odooDbArgs, runOdooBin } from '../../domain/erp/odoo-bin.js';
import { templateDatabaseName } from '../../domain/erp/tenant-database.js';
import { ERP_INVITATION_SCOPE, ERP_PROVIDER_BUTTON } from '../../domain/identity/erp-sign-in.js';
import { tenantBaseUrl } from '../../domain/identity/oidc-clients.js';
import { ensureOdooTemplate } from '../../scripts/odoo-templates.js';
import { ODOO_HOW_TO, odooRuntime, startOdoo, suiteVersion, type OdooServer } from '../support/odoo-server.js';
import { addUser } from '../support/workspace-api.js';
import { Browser, linkTo } from '../support/http-browser.js';
import {
  applyTenant,
  isReady,
  runErpDatabaseUrl,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

const PASSWORD = 'correct horse battery staple';
const adminPassword = 'odoo-suite-admin-password';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'odoo-data-'));
const runtime = odooRuntime(dataDir);
let odoo: OdooServer;
let p: TenantPlatform;
let erpDatabaseUrl: string;

beforeAll(async () => {
  if (!runtime) throw new Error(`this file needs ODOO_SRC (it runs odoo-bin). ${ODOO_HOW_TO}`);
  erpDatabaseUrl = runErpDatabaseUrl();
  await ensureOdooTemplate(runtime, { erpDatabaseUrl, tier: 'starter', adminPassword });
  odoo = await startOdoo({ runtime, erpDatabaseUrl });
  p = await startTenantPlatform(
    {
      ERP_BACKEND: 'odoo',
      ERP_DATABASE_URL: erpDatabaseUrl,
      ERP_ADMIN_PASSWORD: adminPassword,
      ODOO_DATA_DIR: dataDir,
      TENANT_READY_DEADLINE: '5 minutes',
      TENANT_READY_PROBE_INTERVAL: '1s',
      ODOO_SRC: runtime.src,
      ODOO_PYTHON: runtime.python,
    },
    { ingressTo: odoo.url },
  );
}, 900_000);

afterAll(async () => {
  await p?.close();
  await odoo?.close();
});

const name = uniqueTenant('odoosignin');
const host = () => `${name}.${p.cfg.TENANT_DOMAIN}`;
const base = () => tenantBaseUrl(p.cfg, host());

/** Odoo's own web session on the tenant database, straight to Odoo (no tenant route needed). */
const odooAdmin = (password: string): Promise<ErpSession> =>
  openErpSession({ baseUrl: odoo.url, host: host(), db: host(), login: 'admin', password, timeoutMs: 120_000 });

async function erpRows<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: new URL(`/${host()}`, erpDatabaseUrl).toString() });
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** Odoo's login page → the provider (password typed) → /auth_oauth/signin: where Odoo lands the browser. */
async function signIn(email: string) {
  const b = new Browser({ localDomain: p.cfg.TENANT_DOMAIN });
  const page = await b.request(`${base()}/web/login`);
  const link = linkTo(await page.res.text(), ERP_PROVIDER_BUTTON);
  if (!link) throw new Error("Odoo's login page has no provider link");
  const next = await b.request(link);
  return next.url.includes('/interaction/') ? b.submit(next, { email, password: PASSWORD }) : next;
}

async function reconcileAgain(generation: number) {
  await applyTenant(p, name, { tier: 'starter', erpVersion: suiteVersion, ownerName: `Owner ${generation}` });
  return waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === generation, 600_000);
}

const workspaceOf = async () =>
  (await p.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM tenants WHERE name = $1', [name])).rows[0]
    ?.workspace_id;

describe(`the ERP sign-in step on real Odoo ${suiteVersion}`, () => {
  let member: { id: string; email: string };

  it('a tenant database without auth_oidc (Odoo has no model for its providers): the reconcile installs it and members sign in', async () => {
    // the tenant database as cloned from a template made before auth_oidc: the template, without auth_oauth and auth_oidc
    const admin = new pg.Client({ connectionString: erpDatabaseUrl });
    await admin.connect();
    try {
      await admin.query(
        `CREATE DATABASE ${pg.escapeIdentifier(host())} TEMPLATE ${pg.escapeIdentifier(templateDatabaseName('starter', suiteVersion))}`,
      );
    } finally {
      await admin.end();
    }
    const uninstall = `env['ir.module.module'].search([('name', '=', 'auth_oauth')]).button_immediate_uninstall()\nenv.cr.commit()\n`;
    const started = Date.now();
    await runOdooBin(
      runtime!,
      [
        'shell',
        odooAddonsPathArg(runtime!.src),
        `--data-dir=${dataDir}`,
        ...odooDbArgs(erpDatabaseUrl),
        '-d',
        host(),
        '--no-http',
        '--log-level=warn',
      ],
      { input: uninstall },
    );
    console.log(
      `auth_oauth + auth_oidc uninstalled by odoo-bin shell in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    expect(
      await erpRows('SELECT name, state FROM ir_module_module WHERE name IN ($1, $2) ORDER BY name', [
        'auth_oauth',
        ODOO_SIGN_IN_MODULE,
      ]),
    ).toEqual([
      { name: 'auth_oauth', state: 'uninstalled' },
      { name: ODOO_SIGN_IN_MODULE, state: 'uninstalled' },
    ]);
    const session = await odooAdmin(adminPassword);
    const answer = await session.callKw('auth.oauth.provider', 'search_read', [[]]).catch((e: Error) => e);
    console.log(`real Odoo, call_kw on auth.oauth.provider without the module: ${String(answer)}`);
    // a model the database does not have: Odoo 17's call_kw lets the registry's KeyError out, 18 and 19 answer 404
    expect(String(answer)).toContain(
      suiteVersion === '17' ? 'builtins.KeyError: auth.oauth.provider' : 'werkzeug.exceptions.NotFound: 404 Not Found',
    );

    const applied = Date.now();
    await applyTenant(p, name, { tier: 'starter', erpVersion: suiteVersion });
    const ready = await waitForStatus(
      p,
      name,
      (s) => isReady(s) && s.resources.erpSignIn?.state !== 'Pending',
      600_000,
    );
    const step = ready.steps.filter((s) => s.step === 'ensure-erp-sign-in').at(-1);
    console.log(
      `erpSignIn ${JSON.stringify(ready.resources.erpSignIn)}; step: ${step?.message}; ${((Date.now() - applied) / 1000).toFixed(1)} s from the apply`,
    );
    expect(ready.resources.erpSignIn).toMatchObject({ synced: 'True', state: 'Created', externalName: `erp-${name}` });
    // (Odoo's auth_signup sets free sign-up when it is installed: the template had b2c, the step set b2b)
    expect(step?.message).toContain('sign-up scope b2b (was b2c)');
    expect(await erpRows('SELECT state FROM ir_module_module WHERE name = $1', [ODOO_SIGN_IN_MODULE])).toEqual([
      { state: 'installed' },
    ]);

    await expect.poll(workspaceOf, { timeout: 30_000 }).toBeTruthy();
    member = await addUser(p.pool, [{ workspaceId: (await workspaceOf())!, role: 'member' }], PASSWORD);
    await reconcileAgain(2);
    const landed = await signIn(member.email);
    expect(landed.url).toBe(`${base()}/web`);
    expect(await landed.res.text()).toContain(`"username": "${member.email}"`);
  });

  it("with Odoo's sign-up scope b2c a platform account that is no member still gets no Odoo user (the provider refuses it before Odoo sees a code); the next reconcile sets b2b", async () => {
    await p.pool.query('DELETE FROM memberships WHERE user_id = $1', [member.id]);
    await reconcileAgain(3);
    const other = await p.pool.query<{ id: string }>(
      "INSERT INTO workspaces (slug, name) VALUES ($1, 'Other') RETURNING id",
      [uniqueTenant('other')],
    );
    const stranger = await addUser(p.pool, [{ workspaceId: other.rows[0]!.id, role: 'admin' }], PASSWORD);
    const users = (uid: string) =>
      erpRows<{ login: string; active: boolean }>(
        'SELECT login, active FROM res_users WHERE oauth_uid = $1 ORDER BY id',
        [uid],
      );

    // an Odoo administrator sets free sign-up (Settings › Customer Account), through Odoo's ORM
    const session = await odooAdmin(tenantAdminPassword(p.cfg.SECRETS_KEY, host()));
    const [param] = await session.callKw<{ id: number }[]>(
      'ir.config_parameter',
      'search_read',
      [[['key', '=', ERP_INVITATION_SCOPE.key]]],
      { fields: ['value'] },
    );
    if (param) await session.callKw('ir.config_parameter', 'write', [[param.id], { value: 'b2c' }]);
    else await session.callKw('ir.config_parameter', 'create', [{ key: ERP_INVITATION_SCOPE.key, value: 'b2c' }]);

    // the provider answers access_denied to the ERP's redirect URI; auth_oidc then asks the token
    // endpoint for no code (400), which Odoo shows as "Access Denied"
    for (const account of [stranger, member]) {
      const landed = await signIn(account.email);
      expect(landed.url).toBe(`${base()}/web/login?oauth_error=2`);
    }
    expect(await users(stranger.id)).toEqual([]);
    expect((await users(member.id)).map((u) => u.active)).toEqual([false]);

    const ready = await reconcileAgain(4);
    expect(ready.steps.filter((s) => s.step === 'ensure-erp-sign-in').at(-1)?.message).toContain(
      'sign-up scope b2b (was b2c)',
    );
    expect(await erpRows('SELECT value FROM ir_config_parameter WHERE key = $1', [ERP_INVITATION_SCOPE.key])).toEqual([
      { value: 'b2b' },
    ]);
  });
});
