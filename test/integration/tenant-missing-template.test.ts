/**
 * A tenant whose template database is missing (§7): no crash; the tenant's ERP answers 503, and at
 * the (shortened) readiness deadline the tenant reports Ready=False/Unavailable and
 * Synced=False/ReconcileError naming the missing template. Reconciling goes on with backoff: once
 * the template exists the tenant turns Ready without a new apply.
 *
 * The ERP here has a PostgreSQL server of its own (its own connection settings, as in production),
 * started empty for this file, so no other test's templates are touched.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { freePort, startPostgres, type PostgresServer } from '../../scripts/local-servers.js';
import { tempDir } from '../support/env.js';
import {
  applyYaml,
  condition,
  health,
  isReady,
  startTenantPlatform,
  tenantYaml,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let erpServer: PostgresServer;
let p: TenantPlatform;

beforeAll(async () => {
  erpServer = await startPostgres({ dir: tempDir('erp-postgres'), port: await freePort() });
  // a short history limit: while the tenant waits for its template the workflow continues as new
  p = await startTenantPlatform({
    ERP_DATABASE_URL: erpServer.urlFor('postgres'),
    TENANT_READY_DEADLINE: '3s',
    TENANT_RECONCILE_BACKOFF_MAX: '1s',
    TENANT_HISTORY_LIMIT: '150',
  });
});

afterAll(async () => {
  await p?.close();
  await erpServer?.stop();
});

it('reports the missing template at the deadline and turns Ready once it exists, without a new apply', async () => {
  const name = uniqueTenant('notpl');
  const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
  expect((await applyYaml(p, tenantYaml(name, { tier: 'pro', erpVersion: '17' }))).statusCode).toBe(201);

  const stuck = await waitForStatus(p, name, (s) => condition(s, 'Ready')?.reason === 'Unavailable');
  expect(condition(stuck, 'Synced')).toMatchObject({
    status: 'False',
    reason: 'ReconcileError',
    message: 'database: template database "erp_tpl_pro_17" does not exist',
  });
  const ready = condition(stuck, 'Ready')!;
  expect(ready.status).toBe('False');
  expect(ready.message).toContain('not Ready 3s after the apply');
  expect(ready.message).toContain('Unready resources: database, apiUser');
  expect(ready.message).toContain('template database "erp_tpl_pro_17" does not exist');
  expect(stuck.phase).toBe('Unavailable');
  expect(stuck.resources.database).toMatchObject({ synced: 'False', state: 'Failed' });
  expect(stuck.resources.route).toMatchObject({ synced: 'True', state: 'Created' });
  // the route is up and the ERP answers /web/health (real Odoo does for any Host), but the tenant
  // database does not: the probe's authenticate names it
  expect(await health(p, host)).toMatchObject({ healthy: false, httpStatus: 200 });
  expect((await health(p, host)).detail).toContain(`database "${host}" does not exist`);

  // the workflow keeps reconciling across continue-as-new runs, its status carried along
  const continued = await waitForStatus(p, name, (s) => s.steps.some((step) => step.step === 'continue-as-new'));
  expect(continued.steps[0]!.step).not.toBe('continue-as-new');
  expect(continued.phase).toBe('Unavailable');

  // the operator fixes the cause; the next reconcile picks it up
  await ensureErpTemplates(erpServer.urlFor('postgres'), { tiers: ['pro'], versions: ['17'] });
  const fixed = await waitForStatus(p, name, isReady);
  expect(condition(fixed, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });
  expect(fixed.generation).toBe(1);
  expect(fixed.phase).toBe('Ready');
  expect(fixed.resources.database).toMatchObject({
    synced: 'True',
    state: 'Created',
    message: 'cloned from erp_tpl_pro_17',
  });
  expect(await health(p, host)).toMatchObject({ healthy: true, httpStatus: 200 });
  const { rows } = await p.pool.query('SELECT generation FROM tenant_clients WHERE name = $1', [name]);
  expect(rows[0].generation).toBe(1);
  const runs = [];
  for await (const wf of p.temporal.workflow.list({ query: `WorkflowId = 'tenant:${name}'` }))
    runs.push(wf.status.name);
  expect(runs.filter((r) => r === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
  expect(runs.filter((r) => r === 'RUNNING')).toHaveLength(1);
});
