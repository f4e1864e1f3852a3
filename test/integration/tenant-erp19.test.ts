/**
 * A TenantClient on ERP 19, applied through the ops API, turns Ready with the API user's Odoo API
 * key: the readiness probe reads the tenant database over JSON-2 with the key, provisioning makes no
 * XML-RPC call (deprecated on 19), and the dashboards then read it over JSON-2 only.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import { loadErpApiCredentials } from '../../domain/erp/api-user.js';
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

beforeAll(async () => {
  p = await startTenantPlatform();
});
afterAll(async () => {
  await p?.close();
});

it('a 19 tenant turns Ready with an API key and its dashboards read over JSON-2, never XML-RPC', async () => {
  const name = uniqueTenant('v19');
  expect(await applyTenant(p, name, { erpVersion: '19' })).toBe('created');
  const status = await waitForStatus(p, name, isReady);
  expect(condition(status, 'Ready')).toMatchObject({ status: 'True' });
  const host = status.resources.route.externalName.split('/')[1]!;

  const credentials = (await loadErpApiCredentials(p.pool, p.cfg.SECRETS_KEY, name))!;
  expect(credentials.apiKey).toMatch(/^[0-9a-f]{40}$/);
  expect(credentials.apiKeyExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 60 * 86_400_000);
  // Ready was decided over JSON-2 (the probe); provisioning itself talks to the ERP as its admin in a
  // web session and reads its version from /json/version: XML-RPC, deprecated on 19, is never called
  const atReady = p.erpRequests(host);
  expect(atReady['/json/2']).toBeGreaterThan(0);
  expect(atReady['/json/version']).toBeGreaterThan(0);
  expect(atReady['/xmlrpc/2/common'] ?? 0).toBe(0);
  expect(atReady['/xmlrpc/2/object'] ?? 0).toBe(0);

  // the workspace entry comes with the client.provisioned event
  const slugOf = async () =>
    (
      await p.pool.query<{ slug: string }>(
        'SELECT w.slug FROM workspaces w JOIN tenants t ON t.workspace_id = w.id WHERE t.name = $1',
        [name],
      )
    ).rows[0]?.slug;
  await expect.poll(slugOf, { timeout: 30_000 }).toBe(name);
  const slug = name;
  const service = createDashboardService({ pool: p.pool, config: p.cfg });
  const kpis = await service.kpis(slug);
  expect(kpis.erpVersion).toBe('19');
  await service.alerts(slug);
  const after = p.erpRequests(host);
  expect(after['/json/2']! - atReady['/json/2']!).toBeGreaterThanOrEqual(3);
  expect(after['/xmlrpc/2/object'] ?? 0).toBe(0);

  // a reconcile checks the API user's stored password in a web session, not over XML-RPC
  await applyTenant(p, name, { erpVersion: '19', ownerName: 'Owner 2' });
  const again = await waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === 2);
  expect(again.steps.filter((s) => s.step === 'ensure-api-user').at(-1)?.message).toMatch(/ exists$/);
  expect(p.erpRequests(host)['/xmlrpc/2/common'] ?? 0).toBe(0);
});
