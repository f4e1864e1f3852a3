/**
 * The workspace portal end to end in a real browser: Debian's Chromium driven by playwright-core
 * against the account API (serving web/dist at /app/) on the run's real servers, with a real ERP
 * tenant (the stand-in over XML-RPC on a database cloned from a template) behind the dashboard.
 *
 * Screenshots of the main pages go to a temporary folder, or to docs/screenshots/ with
 * PORTAL_SCREENSHOTS=1 (how docs/screenshots/ is made).
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Pool } from '../../lib/db.js';
import { startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';
import { launchChromium } from '../support/chromium.js';
import { cellsOffScreen, screenshotsDir } from '../support/portal.js';
import { addUser, call, login } from '../support/workspace-api.js';

const shots = screenshotsDir();

let bed: ErpTestBed;
let pool: Pool;
let api: Awaited<ReturnType<typeof startApi>>;
let base: string;
let tenant: TestTenant;
let owner: { email: string; password: string };
let browser: Browser;
let page: Page;

beforeAll(async () => {
  bed = await startErpTestBed({ poolSize: 2 });
  pool = bed.pool;
  api = await startApi(bed.cfg);
  base = bed.cfg.API_PUBLIC_URL;
  tenant = await bed.provision({ tier: 'pro', version: '18' });
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]);
  owner = await addUser(pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await api?.close();
  await bed?.close();
});

/** An amount as the browser's locale writes it in `currency` (what the portal shows everywhere). */
const moneyIn = (p: Page, n: number, currency: string) =>
  p.evaluate(([amount, cur]) => new Intl.NumberFormat(undefined, { style: 'currency', currency: cur }).format(amount), [
    n,
    currency,
  ] as const);

/** A workspace-API call from outside the browser, as a key's owner would make it. */
const withKey = (token: string) => call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token });

describe('the workspace portal in Chromium', () => {
  let token: string;
  let prefix: string;

  it('signs in with e-mail and password, keeping no token where scripts can read it', async () => {
    await page.goto(`${base}/app/`);
    await page.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
    await page.screenshot({ path: join(shots, 'sign-in.png') });
    await page.getByLabel('E-mail').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toMatch(/e-mail address or password is not correct/i);

    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // the only workspace opens by itself
    expect(new URL(page.url()).pathname).toBe(`/app/w/${tenant.workspace}/`);
    const stored = await page.evaluate(() => ({
      local: localStorage.length,
      session: sessionStorage.length,
      cookies: document.cookie,
    }));
    expect(stored).toEqual({ local: 0, session: 0, cookies: '' });
  });

  it("draws the cash-flow chart from the tenant's figures (the months `GET …/cashflow` answers by default), with the KPIs and alerts", async () => {
    const expected = await call(base, 'GET', `/api/portal/workspaces/${tenant.workspace}/dashboard/cashflow`, {
      token: await login(base, owner),
    });
    expect(expected.status).toBe(200);
    const chart = page.getByRole('img', { name: /Cash flow per month/ });
    await chart.waitFor();
    const { inflow, outflow, net } = expected.body.totals as { inflow: number; outflow: number; net: number };
    expect(inflow + outflow).toBeGreaterThan(0);
    const money = (n: number, currency = expected.body.currency as string) => moneyIn(page, n, currency);
    expect(await chart.getAttribute('aria-label')).toBe(
      `Cash flow per month in ${expected.body.currency}: in ${await money(inflow)}, out ${await money(outflow)}, net ${await money(net)} in total`,
    );
    // the dashboard shows what a script calling the API without `months` gets: the last 6 months
    expect(expected.body.months).toHaveLength(6);
    expect(await chart.getAttribute('data-months')).toBe('6');
    expect(await chart.getAttribute('data-net')).toBe(String(net));
    await page.getByRole('heading', { name: 'Cash flow, last 6 months' }).waitFor();
    // Chart.js has painted the canvas: it differs from an empty canvas of the same size
    const painted = await chart.evaluate((c: HTMLCanvasElement) => {
      const blank = document.createElement('canvas');
      blank.width = c.width;
      blank.height = c.height;
      return c.width > 0 && c.toDataURL() !== blank.toDataURL();
    });
    expect(painted).toBe(true);
    await expect.poll(() => page.getByText('Revenue this month').count()).toBe(1);
    await expect.poll(() => page.locator('.kpi-value').first().textContent()).toMatch(/\d/);
    // every company of the ERP, labelled, each in its own currency (the demo data has a second one)
    const kpis = await call(base, 'GET', `/api/portal/workspaces/${tenant.workspace}/dashboard/kpis`, {
      token: await login(base, owner),
    });
    const companies = kpis.body.companies as { name: string; currency: string; receivables: number }[];
    expect(new Set(companies.map((c) => c.currency)).size).toBeGreaterThan(1);
    const rows = page.locator('#company-figures tbody tr');
    await expect.poll(() => rows.count()).toBe(companies.length);
    for (const [i, c] of companies.entries()) {
      const cells = await rows.nth(i).locator('td').allTextContents();
      expect(cells[0]).toContain(c.name);
      expect(cells[1]).toBe(c.currency);
      expect(cells[3]).toBe(await money(c.receivables, c.currency));
    }
    await page.getByRole('heading', { name: 'Alerts' }).waitFor();
    // the alert's amount in the same format as every other amount (the demo data has overdue invoices)
    const alerts = await call(base, 'GET', `/api/portal/workspaces/${tenant.workspace}/dashboard/alerts`, {
      token: await login(base, owner),
    });
    const overdue = alerts.body.overdueInvoices as { count: number; total: number };
    expect(overdue.count).toBeGreaterThan(0);
    const alert = page.locator('.alerts li').first();
    await expect.poll(() => alert.textContent()).toContain(`overdue (${await money(overdue.total)})`);
    expect(await page.locator('.alerts').textContent()).not.toMatch(/\d\.\d\d [A-Z]{3}\b/);
    await page.screenshot({ path: join(shots, 'dashboard.png'), fullPage: true });
  });

  it('creates a key with a scope picker, shows its token once, and the key calls the Workspace API', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('reporting');
    expect(await dialog.getByRole('checkbox', { name: /dashboard:read/ }).isChecked()).toBe(true);
    await dialog.getByRole('checkbox', { name: /banking:read/ }).check();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const tokenField = dialog.getByLabel('API key token');
    await tokenField.waitFor();
    token = await tokenField.inputValue();
    expect(token).toMatch(/^ws_live_/);
    await page.screenshot({ path: join(shots, 'api-key-created.png') });

    const res = await withKey(token);
    expect(res.status).toBe(200);
    expect(res.body.workspace).toBe(tenant.workspace);

    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.locator('tr', { hasText: 'reporting' });
    await row.waitFor();
    prefix = (await row.getAttribute('data-key-prefix'))!;
    expect(token.startsWith(prefix)).toBe(true);
    expect(await row.textContent()).toContain('dashboard:read, banking:read');
    expect(await page.content()).not.toContain(token);
  });

  it('has forgotten the token after a reload, while the session survives it', async () => {
    await page.reload();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.locator('tr', { hasText: 'reporting' }).waitFor();
    expect(await page.content()).not.toContain(token);
    expect(await page.evaluate(() => localStorage.length + sessionStorage.length)).toBe(0);
    await page.screenshot({ path: join(shots, 'api-keys.png') });
  });

  it('shows the calls of the key in the execution log, filtered by its prefix, every column and filter fitting at 1280 px', async () => {
    await page.getByRole('link', { name: 'Execution log' }).click();
    await page.getByLabel('Key prefix').fill(prefix);
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator('tbody tr', { hasText: '/api/portal/odoo/:slug/kpis' });
    await row.first().waitFor();
    expect(await row.first().textContent()).toContain('200');
    await page.getByLabel('Key prefix').fill('ws_live_NOSUCHKEY');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No calls match these filters.').waitFor();
    await page.getByLabel('Key prefix').fill(prefix);
    await page.getByRole('button', { name: 'Filter' }).click();
    await row.first().waitFor();
    // at 1280 px everything fits: no column hidden in the table's scroll box, no date field cut short
    const cut = await page.evaluate(() => ({
      scrolledTables: [...document.querySelectorAll('.table-wrap')].filter((w) => w.scrollWidth > w.clientWidth + 1)
        .length,
      shortDateFields: [...document.querySelectorAll<HTMLInputElement>('input[type="datetime-local"]')]
        .filter((input) => {
          const natural = input.cloneNode() as HTMLInputElement;
          natural.style.cssText = 'position: absolute; width: auto';
          document.body.append(natural);
          const needs = natural.getBoundingClientRect().width;
          natural.remove();
          return input.getBoundingClientRect().width + 1 < needs;
        })
        .map((input) => input.name),
    }));
    expect(cut).toEqual({ scrolledTables: 0, shortDateFields: [] });
    expect(await cellsOffScreen(page)).toEqual([]);
    await page.screenshot({ path: join(shots, 'execution-log.png') });
  });

  it('filters the execution log by route, status and time as well', async () => {
    // a call the key has no scope for: refused, and logged with its route and status
    const refused = await call(base, 'GET', '/api/portal/webhooks', { token });
    expect(refused.status).toBe(403);
    const kpis = page.locator('tbody tr', { hasText: '/api/portal/odoo/:slug/kpis' });
    const webhooks = page.locator('tbody tr', { hasText: '/api/portal/webhooks' });
    const filter = async (fields: Record<string, string>) => {
      for (const label of ['Key prefix', 'Route contains', 'Status', 'From', 'Until'])
        await page.getByLabel(label).fill(fields[label] ?? '');
      await page.getByRole('button', { name: 'Filter' }).click();
    };
    // datetime-local takes the browser's local time
    const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

    await filter({ 'Key prefix': prefix });
    await webhooks.first().waitFor();
    expect(await webhooks.first().textContent()).toContain('403');
    await kpis.first().waitFor();

    await filter({ 'Route contains': '/kpis' });
    await kpis.first().waitFor();
    await webhooks.waitFor({ state: 'detached' });

    await filter({ 'Key prefix': prefix, Status: '403' });
    await webhooks.first().waitFor();
    await kpis.waitFor({ state: 'detached' });
    await filter({ Status: '418' });
    await page.getByText('No calls match these filters.').waitFor();

    await filter({ 'Key prefix': prefix, From: local(Date.now() - 3600_000) });
    await kpis.first().waitFor();
    await webhooks.first().waitFor();
    await filter({ 'Key prefix': prefix, Until: local(Date.now() - 3600_000) });
    await page.getByText('No calls match these filters.').waitFor();
    await filter({ 'Key prefix': prefix, Until: local(Date.now() + 3600_000) });
    await kpis.first().waitFor();
    await filter({ 'Key prefix': prefix, From: local(Date.now() + 3600_000) });
    await page.getByText('No calls match these filters.').waitFor();
  });

  it('revokes the key after a confirmation saying it stops at once, and the next call is refused', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Revoke reporting' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('stops working at once');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('No API keys yet.').waitFor();
    const res = await withKey(token);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('keeps the session in several tabs refreshing at once', async () => {
    const tabs = [page, await page.context().newPage(), await page.context().newPage()];
    await Promise.all(tabs.map((tab) => tab.goto(`${base}/app/w/${tenant.workspace}/keys`)));
    for (const tab of tabs) await tab.getByRole('heading', { name: 'API keys' }).waitFor();
    await Promise.all(tabs.map((tab) => tab.reload()));
    for (const tab of tabs) await tab.getByRole('heading', { name: 'API keys' }).waitFor();
    for (const tab of tabs.slice(1)) await tab.close();
  });

  it('shows the ERP integration under readable labels, and its conditions or a sentence saying there are none', async () => {
    await page.goto(`${base}/app/w/${tenant.workspace}/integrations`);
    const card = page.locator('[data-integration="erp"]');
    await card.waitFor();
    const labels = async () => card.locator('dt').allTextContents();
    await expect.poll(labels).toEqual(['Tenant', 'Plan', 'ERP version', 'Address', 'Dashboard access']);
    expect(await card.locator('dd').allTextContents()).toEqual([tenant.name, 'Pro', '18', tenant.host, 'Set up']);
    // entered without a TenantClient: no empty "Conditions", a sentence instead
    expect(await card.getByRole('heading', { name: 'Conditions' }).count()).toBe(0);
    expect(await card.locator('[data-conditions="none"]').textContent()).toBe(
      'No provisioning conditions: this tenant was set up without a TenantClient, so only its route is known.',
    );

    // as the tenant workflow mirrors a TenantClient's status
    const conditions = [
      {
        type: 'Synced',
        status: 'True',
        reason: 'ReconcileSuccess',
        message: '',
        lastTransitionTime: new Date().toISOString(),
        observedGeneration: 2,
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'Unavailable',
        message: 'the route answers 502',
        lastTransitionTime: new Date().toISOString(),
        observedGeneration: 2,
      },
    ];
    await pool.query(
      `INSERT INTO tenant_status (name, uid, spec, phase, conditions, generation, observed_generation) VALUES ($1, gen_random_uuid(), '{}', 'Unavailable', $2, 3, 2)`,
      [tenant.name, JSON.stringify(conditions)],
    );
    try {
      await page.reload();
      await expect
        .poll(labels)
        .toEqual(['Tenant', 'Plan', 'ERP version', 'Address', 'Dashboard access', 'Phase', 'Configuration']);
      expect(await card.locator('dd').allTextContents()).toEqual([
        tenant.name,
        'Pro',
        '18',
        tenant.host,
        'Set up',
        'Unavailable',
        'Being applied (version 3; version 2 is live)',
      ]);
      await card.getByRole('heading', { name: 'Conditions' }).waitFor();
      expect(await card.locator('[data-condition="Synced"]').textContent()).toMatch(
        /^Synced: yes ReconcileSuccess \(since /,
      );
      expect(await card.locator('[data-condition="Ready"]').textContent()).toMatch(
        /^Ready: no Unavailable — the route answers 502 \(since /,
      );
      await page.screenshot({ path: join(shots, 'integrations-erp.png'), fullPage: true });
    } finally {
      await pool.query('DELETE FROM tenant_status WHERE name = $1', [tenant.name]);
    }
  });

  it('works on a narrow screen and signs out', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Dashboard' }).click();
    await page.getByRole('img', { name: /Cash flow per month/ }).waitFor();
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await page.locator('#company-figures tbody tr').first().waitFor();
    expect(await cellsOffScreen(page)).toEqual([]);
    await page.screenshot({ path: join(shots, 'dashboard-narrow.png'), fullPage: true });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
    // the session is over: a reload does not bring it back
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
  });
});
