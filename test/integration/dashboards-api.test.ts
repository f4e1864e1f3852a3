/**
 * The dashboard endpoints end to end: a workspace key over real HTTP → the account API → the
 * tenant's ERP (the stand-in, over XML-RPC) on a real tenant database cloned from a template.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import { erpTestConfig, provisionTestTenant, startTestErp, type TestTenant } from '../support/erp-tenant.js';
import { addUser, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';

let cfg: Config;
let pool: Pool;
let admin: Pool;
let erp: ErpStandIn;
let api: Awaited<ReturnType<typeof startApi>>;
let base: string;
let tenant: TestTenant;
let token: string;

beforeAll(async () => {
  const erpCfg = await erpTestConfig();
  pool = createPool(erpCfg.DATABASE_URL, 2);
  admin = createPool(erpCfg.ERP_DATABASE_URL, 2);
  erp = await startTestErp(erpCfg);
  cfg = await erpTestConfig({ ERP_URL: erp.url });
  api = await startApi(cfg);
  base = cfg.API_PUBLIC_URL;
  tenant = await provisionTestTenant(cfg, pool, admin, { tier: 'pro', version: '18', erpUrl: erp.url });
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]);
  const owner = await addUser(pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]);
  token = (await createKey(base, await login(base, owner), { name: 'dashboards' })).token;
});

afterAll(async () => {
  await api?.close();
  await erp?.close();
  await pool?.end();
  await admin?.end();
});

describe('GET /api/portal/odoo/:slug/{kpis,cashflow,alerts} with a dashboard:read key', () => {
  it('kpis: the figures of the workspace ERP', async () => {
    const res = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ workspace: tenant.workspace, erpVersion: '18' });
    for (const figure of ['revenue', 'receivables', 'overdueReceivables', 'payables', 'cashBalance'])
      expect(typeof res.body[figure]).toBe('number');
    expect(res.body.cashJournals.length).toBeGreaterThan(0);
    expect(res.headers.get('ratelimit-limit')).toBe('100');
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  it('answers a figure asked again while it is cached with the same JSON, its type and length', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${base}/api/portal/odoo/${tenant.workspace}/alerts`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      expect(JSON.parse(text).workspace).toBe(tenant.workspace);
      answers.push(text);
    }
    expect(answers[1]).toBe(answers[0]);
  });

  it('cashflow: one entry per month asked for', async () => {
    const res = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/cashflow?months=3`, { token });
    expect(res.status).toBe(200);
    expect(res.body.months).toHaveLength(3);
    expect(res.body.totals.net).toBeCloseTo(res.body.totals.inflow - res.body.totals.outflow, 2);
  });

  it('alerts: overdue invoices and what else needs attention', async () => {
    const res = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/alerts`, { token });
    expect(res.status).toBe(200);
    expect(res.body.workspace).toBe(tenant.workspace);
    expect(typeof res.body.overdueInvoices.count).toBe('number');
  });

  it('answers 400 for a months value out of range', async () => {
    const res = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/cashflow?months=0`, { token });
    expect(res.status).toBe(400);
  });

  it('answers 404 with a problem for a workspace that has no tenant ERP', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken);
    const res = await call(base, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: key.token });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it("refuses the ERP workspace's figures to another workspace's key", async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken, { name: 'all', scopes: ['*'] });
    const res = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: key.token });
    expect(res.status).toBe(403);
    expect(JSON.stringify(res.body)).not.toContain('revenue');
  });
});
