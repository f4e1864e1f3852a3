/**
 * A Ready tenant whose database vanishes is noticed, on the real platform (Temporal, the worker,
 * the ERP stand-in, PostgreSQL): the workflow probes a Ready tenant every
 * TENANT_READY_PROBE_INTERVAL, turns Ready=False with a message naming the database, and Ready
 * again once the database is back. Nothing is re-cloned behind the operator's back.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import {
  applyTenant,
  condition,
  isReady,
  runErpDatabaseUrl,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let p: TenantPlatform;
let admin: pg.Pool;

beforeAll(async () => {
  p = await startTenantPlatform({ TENANT_READY_PROBE_INTERVAL: '300ms' });
  admin = new pg.Pool({ connectionString: runErpDatabaseUrl(), max: 1 });
});
afterAll(async () => {
  await admin?.end();
  await p?.close();
});

/** Renames a database (its connections cut first), as a restore into place or an accident would. */
async function rename(from: string, to: string) {
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [from]);
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(from)} RENAME TO ${pg.escapeIdentifier(to)}`);
}

it('a Ready tenant whose database disappears turns Ready=False naming it, and Ready again when it is back', async () => {
  const name = uniqueTenant('lost');
  expect(await applyTenant(p, name, { tier: 'starter' })).toBe('created');
  await waitForStatus(p, name, (s) => isReady(s) && s.phase === 'Ready');
  const database = `${name}.${p.cfg.TENANT_DOMAIN}`;

  await rename(database, `${name}-away`);
  const lost = await waitForStatus(p, name, (s) => condition(s, 'Ready')?.status === 'False');
  expect(lost.phase).toBe('Unavailable');
  expect(condition(lost, 'Ready')!.reason).toBe('Unavailable');
  expect(condition(lost, 'Ready')!.message).toContain(`tenant database ${database} does not answer while Ready`);
  expect(condition(lost, 'Ready')!.message).toContain(`database "${database}" does not exist`);
  // not re-cloned: the database stays away until someone brings it back
  expect((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount).toBe(0);

  await rename(`${name}-away`, database);
  const back = await waitForStatus(p, name, (s) => isReady(s) && s.phase === 'Ready');
  expect(condition(back, 'Ready')!.reason).toBe('Available');
});
