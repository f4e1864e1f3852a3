/**
 * "Open ERP" in Chromium: the owner signed in to the portal opens their tenant's ERP (the stand-in,
 * reached by its own host name under npm run dev's erp.localhost, which Chromium resolves to this
 * machine without any host mapping) and lands in its web client signed in as themselves, through the
 * platform's OpenID provider, without typing a password again or clicking anything of the ERP's.
 */
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import { startAuth } from '../../services/auth/server.js';
import type { Config } from '../../lib/config.js';
import { erpApiUserDeps } from '../../domain/erp/admin-session.js';
import { ensureErpSignInProvider, syncErpSignInUsers, tenantMembers } from '../../domain/identity/erp-sign-in.js';
import {
  ensureTenantClient,
  erpRedirectUri,
  oidcProviderIssuer,
  tenantBaseUrl,
} from '../../domain/identity/oidc-clients.js';
import { freePort } from '../../scripts/local-servers.js';
import { DEV_TENANT_DOMAIN } from '../../scripts/dev-tenant-domain.js';
import { startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';
import { launchChromium } from '../support/chromium.js';
import { screenshotsDir } from '../support/portal.js';
import { addUser } from '../support/workspace-api.js';

const shots = screenshotsDir();
let bed: ErpTestBed;
let cfg: Config;
let api: Awaited<ReturnType<typeof startApi>>;
let auth: Awaited<ReturnType<typeof startAuth>>;
let tenant: TestTenant;
let owner: { email: string; password: string };
let browser: Browser;

beforeAll(async () => {
  const authPort = await freePort();
  bed = await startErpTestBed({
    poolSize: 2,
    // npm run dev's tenant domain: a browser resolves its hosts to this machine by itself
    settings: {
      AUTH_PORT: String(authPort),
      AUTH_URL: `http://127.0.0.1:${authPort}`,
      TENANT_DOMAIN: DEV_TENANT_DOMAIN,
    },
  });
  cfg = { ...bed.cfg, TENANT_BASE_URL: `http://{host}:${new URL(bed.erp.url).port}` };
  api = await startApi(cfg);
  auth = await startAuth(cfg);
  tenant = await bed.provision({ tier: 'pro', version: '18' });
  const { rows } = await bed.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [
    tenant.workspace,
  ]);
  owner = await addUser(bed.pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]);
  // what the reconcile's ensure-erp-sign-in does (activities/tenant-sign-in.ts)
  const client = await ensureTenantClient(
    bed.pool,
    cfg.SECRETS_KEY,
    tenant.name,
    erpRedirectUri(tenantBaseUrl(cfg, tenant.host)),
  );
  const deps = erpApiUserDeps(cfg, bed.pool, bed.erp.url);
  const { providerId } = await ensureErpSignInProvider(deps, tenant.database, oidcProviderIssuer(cfg), client);
  await syncErpSignInUsers(deps, tenant.database, providerId, await tenantMembers(bed.pool, tenant.name));
  browser = await launchChromium(); // no host mapping: <tenant>.erp.localhost is loopback to Chromium
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await auth?.close();
  await api?.close();
  await bed?.close();
});

describe('Open ERP in Chromium', () => {
  it('the owner signed in to the portal opens the ERP and is signed in there as themselves', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    await page.goto(`${cfg.API_PUBLIC_URL}/app/`);
    await page.getByLabel('E-mail').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    // no form or click of the ERP's on the way: "Open ERP" starts the ERP's own sign-in through the provider
    const erpPages: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame() && frame.url().startsWith(tenantBaseUrl(cfg, tenant.host)))
        erpPages.push(new URL(frame.url()).pathname);
    });
    await page.getByRole('button', { name: 'Open ERP' }).click();
    await page.waitForURL(`${tenantBaseUrl(cfg, tenant.host)}/web`);
    expect(erpPages).toEqual(['/web']);
    await page.screenshot({ path: join(shots, 'open-erp.png') });
    expect(await page.locator('.o_user_menu').getAttribute('data-login')).toBe(owner.email);
    expect(await page.getByLabel('Password').count()).toBe(0);
  });

  it("the ERP's login page stays a usable page: its password form (the ERP's own admin) and the provider's button", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${tenantBaseUrl(cfg, tenant.host)}/web/login`);
    expect(await page.getByLabel('Password').isVisible()).toBe(true);
    expect(await page.getByRole('link', { name: 'Sign in with Plana' }).isVisible()).toBe(true);
    await page.context().close();
  });
});
