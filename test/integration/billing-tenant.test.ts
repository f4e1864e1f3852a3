/**
 * Billing and the tenant, for real (tenant workflow on the Temporal dev server, the ERP stand-in,
 * the account API): a subscription's tier change becomes a TenantClient apply (generation + 1,
 * reconciled to the new tier); a deleted subscription cancels the tenant (its soak period starts);
 * subscribing again reactivates it. And the tenant ERP's SaaS endpoints on the tenant's own host,
 * answering from that subscription, with their callbacks authenticated and idempotent.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { event, sandboxIds, sendEvent, subscription } from '../../sandbox/stripe/sender.js';
import { TIERS, tierModuleNames } from '../../domain/billing/tiers.js';
import { tenantAdminPassword } from '../../domain/erp/api-user.js';
import { createErpClient } from '../../domain/erp/client.js';
import { queryTenantDb } from '../support/erp-tenant.js';
import {
  applyTenant,
  describe as describeTenant,
  isReady,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let p: TenantPlatform;
let name: string;
let host: string;
let saasJobsKey: string;
let erpKey: string;

const send = (evt: Parameters<typeof sendEvent>[2]) =>
  sendEvent(`${p.cfg.API_PUBLIC_URL}/api/webhooks/stripe`, p.cfg.STRIPE_WEBHOOK_SECRET, evt);
const generation = async () =>
  (
    await p.pool.query<{ generation: number; tier: string }>(
      `SELECT generation, spec->>'tier' AS tier FROM tenant_status WHERE name = $1`,
      [name],
    )
  ).rows[0]!;
const sub = (
  n: number,
  tier: 'starter' | 'pro' | 'enterprise',
  extra: Partial<Parameters<typeof subscription>[0]> = {},
) => {
  const ids = sandboxIds(name, n);
  return subscription({ ...ids, id: ids.subscription, workspace: name, tier, seats: 2, ...extra });
};
/** A request to the tenant's own host, as its users and the platform's jobs reach it (node:http: fetch cannot set Host). */
function tenantCall(
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; cookie?: string } = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever JSON each endpoint answers
): Promise<{ status: number; body: any; cookie?: string }> {
  const url = new URL(p.erpUrl);
  const headers: Record<string, string> = { host };
  if (opts.key) headers['x-api-key'] = opts.key;
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path, method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          body: /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : text,
          cookie: res.headers['set-cookie']?.[0]?.split(';')[0],
        }),
      );
    });
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

/** A web session of the tenant's ERP admin (its `session_id` cookie), logged in on the tenant's host as in a browser. */
async function erpSession(): Promise<string> {
  const res = await tenantCall('POST', '/web/session/authenticate', {
    body: {
      jsonrpc: '2.0',
      method: 'call',
      params: { db: host, login: 'admin', password: tenantAdminPassword(p.cfg.SECRETS_KEY, host) },
    },
  });
  if (!res.cookie || !res.body.result?.uid) throw new Error(`ERP login failed: ${JSON.stringify(res.body)}`);
  return res.cookie;
}
/** A read of the tenant's SaaS endpoints as the tenant's ERP makes it: in its admin's web session. */
const saasRead = async (path: string) => tenantCall('GET', path, { cookie: await erpSession() });

/** The modules installed in the tenant's ERP database. */
const installedModules = async () =>
  (
    await queryTenantDb<{ name: string }>(
      p.cfg,
      host,
      `SELECT name FROM ir_module_module WHERE state = 'installed' ORDER BY name`,
    )
  ).map((r) => r.name);
/** The tenant's ERP as its admin (XML-RPC through the tenant's route). */
const erpAsAdmin = () =>
  createErpClient({
    baseUrl: p.erpUrl,
    host,
    db: host,
    login: 'admin',
    password: tenantAdminPassword(p.cfg.SECRETS_KEY, host),
  });

/** Polls outside a test (expect.poll only works inside one). */
async function until(check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  p = await startTenantPlatform();
  name = uniqueTenant('bill');
  host = `${name}.${p.cfg.TENANT_DOMAIN}`;
  expect(await applyTenant(p, name, { tier: 'starter' })).toBe('created');
  // Ready, and the provisioning callback has created the workspace entry (slug = tenant name)
  await until(async () => {
    const { rows } = await p.pool.query<{ status: Parameters<typeof isReady>[0] }>(
      'SELECT status FROM tenant_status WHERE name = $1',
      [name],
    );
    return rows[0]?.status.conditions !== undefined && isReady(rows[0].status);
  });
  await until(async () => (await p.pool.query('SELECT 1 FROM workspaces WHERE slug = $1', [name])).rowCount === 1);
  const store = new PgSecretStore(p.pool, p.cfg.SECRETS_KEY);
  saasJobsKey = (await store.current('saas-jobs', 'account-api')).key;
  erpKey = (await store.current('erp', 'account-api')).key;
  expect((await send(event('customer.subscription.created', sub(1, 'starter')))).status).toBe(200);
});

afterAll(async () => {
  await p?.close();
});

describe('subscription → tenant', () => {
  it('a tier change applies the TenantClient with the new tier (generation + 1) and the reconcile picks it up', async () => {
    expect(await generation()).toEqual({ generation: 1, tier: 'starter' });
    const res = await send(event('customer.subscription.updated', sub(1, 'pro')));
    expect(res.body.outcome).toContain(`tenant ${name} tier starter → pro (generation 2)`);
    // written where the TenantClient lives: `kubectl get tenantclients` shows the new tier
    const object = await p.kube.api.get(name);
    expect(object.spec.tier).toBe('pro');
    expect(object.metadata.generation).toBe(2);
    // and the controller applies that generation to the tenant
    await expect.poll(generation, { timeout: 20_000 }).toEqual({ generation: 2, tier: 'pro' });
    const status = await waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === 2);
    expect(status.conditions.find((c) => c.type === 'Synced')).toMatchObject({ status: 'True', observedGeneration: 2 });
    // the reconcile installed the pro modules in the tenant's ERP database (DESIGN §5), as its admin over XML-RPC
    const proOnly = ['sale_management', 'purchase', 'crm', 'stock'];
    expect(status.steps.filter((s) => s.step === 'ensure-tier-modules').at(-1)).toMatchObject({
      outcome: 'ok',
      message: `pro modules installed: ${[...proOnly].sort().join(', ')}; event rules: made stock.changed; 2 in place`,
    });
    expect(await installedModules()).toEqual(expect.arrayContaining(tierModuleNames('pro')));
    expect(await installedModules()).not.toContain('mrp');
    // and the ERP's own answer to a user: the Apps list shows them installed
    const apps = await erpAsAdmin().executeKw<{ name: string; state: string }[]>(
      'ir.module.module',
      'search_read',
      [[['name', 'in', proOnly]]],
      { fields: ['name', 'state'] },
    );
    expect(apps.map((a) => a.state)).toEqual(proOnly.map(() => 'installed'));
    // the same tier again (a seat change) applies nothing
    await send(event('customer.subscription.updated', sub(1, 'pro', { seats: 5 })));
    expect(await generation()).toEqual({ generation: 2, tier: 'pro' });
  });

  it('a deleted subscription cancels the tenant (soak period), a new one reactivates it', async () => {
    const deleted = event('customer.subscription.deleted', sub(1, 'pro', { status: 'canceled' }));
    const res = await send(deleted);
    expect(res.body.outcome).toContain(`tenant ${name} cancelled (soak period started)`);
    const cancelled = await describeTenant(p, name);
    expect(cancelled.status.phase).toBe('Cancelled');
    expect(Date.parse(cancelled.status.deprovisionAt!)).toBeGreaterThan(Date.now());
    // Stripe sends it again: nothing happens twice
    expect((await send(deleted)).body).toMatchObject({ duplicate: true });

    const resubscribed = await send(event('customer.subscription.created', sub(2, 'pro')));
    expect(resubscribed.body.outcome).toContain(`tenant ${name} reactivated`);
    const status = await waitForStatus(p, name, (s) => s.phase !== 'Cancelled' && isReady(s));
    expect(status.deprovisionAt).toBeUndefined();
    const { rows } = await p.pool.query(
      `SELECT status, provider_subscription_id FROM subscriptions s JOIN workspaces w ON w.id = s.workspace_id WHERE w.slug = $1`,
      [name],
    );
    expect(rows[0]).toEqual({ status: 'active', provider_subscription_id: sandboxIds(name, 2).subscription });
    // a late event of the old subscription changes nothing
    const late = await send(event('customer.subscription.deleted', sub(1, 'pro', { status: 'canceled' })));
    expect(late.body.outcome).toMatch(/^ignored: .* is not the workspace's current subscription/);
    expect((await describeTenant(p, name)).status.phase).not.toBe('Cancelled');
  });
});

describe('tenant ERP /svc/saas endpoints', () => {
  it("answer only the tenant's ERP users and the platform: anyone else on the tenant's public host gets 401", async () => {
    const current = sandboxIds(name, 2).subscription;
    const reads = ['/svc/saas/tiers', '/svc/saas/tier/pro/modules', `/svc/saas/subscription/${current}`];
    for (const path of reads) {
      const anonymous = await tenantCall('GET', path);
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.body, path).toMatchObject({ status: 401, detail: expect.stringContaining('log in to the ERP') });
      expect(JSON.stringify(anonymous.body)).not.toContain(current);
      // a session cookie the ERP never issued, a wrong service key
      expect((await tenantCall('GET', path, { cookie: 'session_id=forged' })).status, path).toBe(401);
      expect((await tenantCall('GET', path, { key: 'not-a-key' })).status, path).toBe(401);
      // the ERP's logged-in user, and the platform's own keys
      expect((await saasRead(path)).status, path).toBe(200);
      expect((await tenantCall('GET', path, { key: erpKey })).status, path).toBe(200);
      expect((await tenantCall('GET', path, { key: saasJobsKey })).status, path).toBe(200);
    }
  });

  it("the payment stand-in's customer and subscription ids are random, not derived from the workspace", () => {
    const ids = sandboxIds(name, 2);
    expect(ids.customer).toMatch(/^cus_[A-Za-z0-9]{14}$/);
    expect(ids.subscription).toMatch(/^sub_[A-Za-z0-9]{24}$/);
    expect(ids.customer).not.toContain(Buffer.from(name).toString('hex').slice(0, 8));
    expect(sandboxIds(name, 2)).toEqual(ids); // the same customer and subscription for the rest of the run
    expect(sandboxIds(`${name}x`, 2).subscription).not.toBe(ids.subscription);
  });

  it('answer the tiers, a tier modules and the subscription from the platform data', async () => {
    const tiers = await saasRead('/svc/saas/tiers');
    expect(tiers.status).toBe(200);
    expect(tiers.body).toMatchObject({ tenant: name, current: 'pro' });
    expect(tiers.body.tiers.map((t: { code: string }) => t.code)).toEqual(['starter', 'pro', 'enterprise']);
    const modules = await saasRead('/svc/saas/tier/enterprise/modules');
    expect(modules.body.modules).toEqual(TIERS[2]!.modules);
    expect(modules.body.modules.map((m: { name: string }) => m.name)).toContain('mrp');
    expect((await saasRead('/svc/saas/tier/platinum/modules')).status).toBe(404);
    const current = sandboxIds(name, 2).subscription;
    const subRes = await saasRead(`/svc/saas/subscription/${current}`);
    expect(subRes).toMatchObject({ status: 200, body: { tenant: name, tier: 'pro', status: 'active', seats: 2 } });
    // the old subscription, or anyone else's, is not this tenant's
    expect((await saasRead(`/svc/saas/subscription/${sandboxIds(name, 1).subscription}`)).status).toBe(404);
    expect((await saasRead('/svc/saas/subscription/sub_someoneelse')).status).toBe(404);
    // a dot segment cannot climb out of the tenant's /api/saas/<tenant>/ on the account API
    for (const path of ['/svc/saas/subscription/..', '/svc/saas/subscription/%2e%2e', '/svc/saas/tier/../modules']) {
      expect((await saasRead(path)).status, path).toBe(404);
    }
  });

  it("the account API side takes only the platform's erp and saas-jobs keys for reads", async () => {
    const url = `${p.cfg.API_PUBLIC_URL}/api/saas/${name}/tiers`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { 'x-api-key': 'not-a-key' } })).status).toBe(401);
    expect((await fetch(url, { headers: { 'x-api-key': saasJobsKey } })).status).toBe(200);
    expect((await fetch(url, { headers: { 'x-api-key': erpKey } })).status).toBe(200);
  });

  it('a job update callback needs the saas-jobs key and is idempotent and ordered', async () => {
    const job = `upgrade-${name}`;
    expect(
      (await tenantCall('POST', `/svc/saas/job/${job}/update`, { body: { state: 'running', progress: 10 } })).status,
    ).toBe(401);
    expect(
      (
        await tenantCall('POST', `/svc/saas/job/${job}/update`, {
          key: erpKey,
          body: { state: 'running', progress: 10 },
        })
      ).status,
    ).toBe(401);
    const first = await tenantCall('POST', `/svc/saas/job/${job}/update`, {
      key: saasJobsKey,
      body: { state: 'running', progress: 10, message: 'installing' },
    });
    expect(first).toMatchObject({
      status: 200,
      body: { job, tenant: name, state: 'running', progress: 10, updates: 1, changed: true },
    });
    const repeat = await tenantCall('POST', `/svc/saas/job/${job}/update`, {
      key: saasJobsKey,
      body: { state: 'running', progress: 10, message: 'installing' },
    });
    expect(repeat.body).toMatchObject({ progress: 10, updates: 1, changed: false });
    const done = await tenantCall('POST', `/svc/saas/job/${job}/update`, { key: saasJobsKey, body: { state: 'done' } });
    expect(done.body).toMatchObject({ state: 'done', progress: 100, updates: 2, changed: true });
    // a late progress report of the finished job changes nothing; another outcome is refused
    expect(
      (
        await tenantCall('POST', `/svc/saas/job/${job}/update`, {
          key: saasJobsKey,
          body: { state: 'running', progress: 50 },
        })
      ).body,
    ).toMatchObject({ state: 'done', changed: false });
    expect(
      (await tenantCall('POST', `/svc/saas/job/${job}/update`, { key: saasJobsKey, body: { state: 'failed' } })).status,
    ).toBe(409);
    expect(
      (await tenantCall('POST', `/svc/saas/job/${job}/update`, { key: saasJobsKey, body: { state: 'exploded' } }))
        .status,
    ).toBe(400);
  });

  it('a backup callback is kept once per backup id', async () => {
    const body = { backupId: `bk-${name}-1`, status: 'done', sizeBytes: 4096 };
    expect((await tenantCall('POST', '/svc/saas/backup/callback', { body })).status).toBe(401);
    const results = await Promise.all(
      [1, 2, 3].map(() => tenantCall('POST', '/svc/saas/backup/callback', { key: saasJobsKey, body })),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(results.filter((r) => r.body.duplicate === false)).toHaveLength(1);
    expect(
      (await tenantCall('POST', '/svc/saas/backup/callback', { key: saasJobsKey, body: { ...body, status: 'failed' } }))
        .status,
    ).toBe(409);
    const { rows } = await p.pool.query('SELECT count(*)::int AS n FROM saas_backup_callbacks WHERE tenant = $1', [
      name,
    ]);
    expect(rows[0].n).toBe(1);
  });
});

describe('a downgrade', () => {
  it("changes the tier (generation + 1) and keeps the installed modules: uninstalling would drop the customer's records", async () => {
    const before = await generation();
    const res = await send(event('customer.subscription.updated', sub(2, 'starter')));
    expect(res.body.outcome).toContain(`tenant ${name} tier pro → starter (generation ${before.generation + 1})`);
    const status = await waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === before.generation + 1);
    expect(status.steps.filter((s) => s.step === 'ensure-tier-modules').at(-1)!.message).toBe(
      `starter modules present (${tierModuleNames('starter').length}); kept from a higher tier (a downgrade uninstalls nothing): crm, purchase, sale_management, stock; event rules: 3 in place`,
    );
    expect(await installedModules()).toEqual(expect.arrayContaining(tierModuleNames('pro')));
    // what the lower tier changes: the backup schedule (the starter retention) and the tier the ERP's SaaS endpoints show
    expect(status.steps.filter((s) => s.step === 'create-backup-schedule').at(-1)!.message).toBe(
      `backup:${name} updated`,
    );
    expect((await saasRead('/svc/saas/tiers')).body).toMatchObject({ current: 'starter' });
  });
});
