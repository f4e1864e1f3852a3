/**
 * Restore as a workflow (`restore:<name>`): a tenant's backup (or its latest) restored as a new,
 * separate tenant with its own database, filestore folder, route and host, saying which backup it
 * came from, torn down after RESTORE_KEEP_FOR unless kept. Failure paths: a corrupt object (the
 * restore refuses, nothing stays), the object store down (the restore waits, nothing is routed),
 * two restores of one tenant at once (the second refused), a deprovisioned tenant's backup within
 * its retention (restored, as a new tenant). And the backup drill: the latest backup restored
 * into a scratch tenant, compared with the figures recorded when it was taken, torn down, operators
 * alerted on a mismatch or a failure, the results listed per tenant.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { routedTenants, routeOfHost } from '../../domain/tenants/http-routes.js';
import { ensureBackupDrillSchedules } from '../../domain/tenants/backup-schedules.js';
import { drillTenantsOfTier, type DrillResult } from '../../domain/tenants/backup-drills.js';
import * as backupSupport from '../support/backups.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import {
  deprovisionNow,
  mailsTo,
  ops,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';
import { testKeys } from '../support/service-keys.js';

let p: TenantPlatform;
let relay: TcpProxy;

beforeAll(async () => {
  ({ p, relay } = await backupSupport.startBackupPlatform({ RESTORE_KEEP_FOR: '6s' }));
});

afterAll(async () => {
  await p?.close();
  await relay?.close();
});

const hostOf = (name: string) => backupSupport.hostOf(p, name);
const attachment = (name: string) => backupSupport.attachmentPath(p, name);
const inTenantDb = <T>(database: string, fn: Parameters<typeof backupSupport.inTenantDb<T>>[2]) =>
  backupSupport.inTenantDb(p, database, fn);
const partnerNames = (database: string) =>
  inTenantDb(database, async (db) =>
    (await db.query<{ name: string }>('SELECT name FROM res_partner')).rows.map((r) => r.name),
  );
const databaseExists = async (database: string) =>
  (await p.pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1;

/** A Ready tenant with a partner and an attachment, backed up once; returns its backup id. */
async function backedUpTenant(prefix: string): Promise<{ name: string; backupId: string }> {
  const name = uniqueTenant(prefix);
  await backupSupport.readyTenantWithAttachment(p, name, { attachment: 'invoice as it was' });
  await inTenantDb(hostOf(name), (db) => db.query(`INSERT INTO res_partner (name) VALUES ('Before the backup')`));
  return { name, backupId: await backupSupport.backUpNow(p, name) };
}

const restore = (name: string, body: Record<string, unknown> = {}) =>
  p.api.app.inject({
    method: 'POST',
    url: `/api/ops/tenants/${name}/restores`,
    headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
    payload: body,
  });
const restoreState = async (name: string) => (await ops(p, 'GET', `/api/ops/restores/${name}`)).json();
const waitForRestore = (name: string, state: string, timeout = 90_000) =>
  expect.poll(async () => (await restoreState(name)).state, { timeout, interval: 250 }).toBe(state);
const workflowOf = (name: string) => p.temporal.workflow.getHandle(`restore:${name}`);

it('restores the backup as a new tenant with its own database, filestore and route, says where it came from, and tears it down in time', async () => {
  const { name, backupId } = await backedUpTenant('rs');
  // the tenant changes after its backup
  await inTenantDb(hostOf(name), (db) => db.query(`INSERT INTO res_partner (name) VALUES ('After the backup')`));
  writeFileSync(attachment(name), 'invoice changed since');

  const res = await restore(name);
  expect(res.statusCode).toBe(202);
  const { restore: started, workflowId } = res.json();
  expect(started).toMatchObject({ sourceTenant: name, backupId, state: 'restoring' });
  expect(started.name).toMatch(new RegExp(`^${name}-r[0-9a-f]{6}$`));
  expect(workflowId).toBe(`restore:${started.name}`);
  const copy = started.name as string;

  await waitForRestore(copy, 'ready');
  const ready = await restoreState(copy);
  expect(ready).toMatchObject({ host: hostOf(copy), backupId, keep: false });
  expect(Date.parse(ready.expiresAt) - Date.parse(ready.restoredAt)).toBeGreaterThan(4_000);
  // its own database, as the backup had it; its own folder; its own route
  expect(await partnerNames(hostOf(copy))).toContain('Before the backup');
  expect(await partnerNames(hostOf(copy))).not.toContain('After the backup');
  expect(readFileSync(attachment(copy), 'utf8')).toBe('invoice as it was');
  expect(await routeOfHost(p.pool, hostOf(copy))).toMatchObject({ tenant: copy, database: hostOf(copy) });
  // neutralised as Odoo's neutralize does: its automation rules post no webhooks; the source's still do
  const webhookUrls = (database: string) =>
    inTenantDb(database, async (db) => ({
      urls: (
        await db.query<{ webhook_url: string }>(`SELECT webhook_url FROM ir_act_server WHERE state = 'webhook'`)
      ).rows.map((r) => r.webhook_url),
      neutralized: (
        await db.query<{ value: string }>(`SELECT value FROM ir_config_parameter WHERE key = 'database.is_neutralized'`)
      ).rows.map((r) => r.value),
    }));
  const source = await webhookUrls(hostOf(name));
  expect(source.urls.length).toBeGreaterThan(0);
  expect(source.urls).not.toContain('neutralization - disable webhook');
  expect(source.neutralized).toEqual([]);
  expect(await webhookUrls(hostOf(copy))).toEqual({
    urls: source.urls.map(() => 'neutralization - disable webhook'),
    neutralized: ['true'],
  });
  // a copy, not the customer's ERP: the ERP event jobs (sweep, rule rewrite) leave it alone
  const routed = (await routedTenants(p.pool)).map((t) => t.tenant);
  expect(routed).toContain(name);
  expect(routed).not.toContain(copy);
  // the weekly drill of the tenant's tier (starter) visits it, not its copy; another tier's drill does not
  expect(await drillTenantsOfTier(p.pool, 'starter')).toContain(name);
  expect(await drillTenantsOfTier(p.pool, 'starter')).not.toContain(copy);
  expect(await drillTenantsOfTier(p.pool, 'pro')).not.toContain(name);
  // the source is untouched
  expect(readFileSync(attachment(name), 'utf8')).toBe('invoice changed since');
  expect(await partnerNames(hostOf(name))).toContain('After the backup');
  // listed under the source
  const listed = (await ops(p, 'GET', `/api/ops/tenants/${name}/restores`)).json().items;
  expect(listed).toContainEqual(expect.objectContaining({ name: copy, backupId }));

  // not kept: torn down after RESTORE_KEEP_FOR (6 s here), route first
  await waitForRestore(copy, 'torn-down', 60_000);
  expect(await routeOfHost(p.pool, hostOf(copy))).toBeNull();
  expect(await databaseExists(hostOf(copy))).toBe(false);
  expect(existsSync(path.dirname(attachment(copy)))).toBe(false);
  expect(await workflowOf(copy).result()).toMatchObject({ outcome: 'torn-down', backupId });
  // the history reads like a runbook
  const history = await workflowOf(copy).fetchHistory();
  const summaries = history.events!.flatMap((e) =>
    e.userMetadata?.summary?.data ? [Buffer.from(e.userMetadata.summary.data).toString()] : [],
  );
  expect(summaries.join('\n')).toContain(`Fetch backup ${backupId} of ${name} (SHA-256 checked)`);
  expect(summaries.join('\n')).toContain(`Neutralise ${hostOf(copy)} as Odoo's neutralize does`);
}, 180_000);

it('a kept copy stays past its time', async () => {
  const { name } = await backedUpTenant('rskeep');
  const copy = (await restore(name)).json().restore.name as string;
  await waitForRestore(copy, 'ready');
  const kept = await ops(p, 'POST', `/api/ops/restores/${copy}/keep`);
  expect(kept.statusCode).toBe(200);
  expect(kept.json()).toMatchObject({ keep: true, state: 'ready' });
  expect(await workflowOf(copy).result()).toMatchObject({ outcome: 'kept' });
  expect(await routeOfHost(p.pool, hostOf(copy))).not.toBeNull();
  expect((await restoreState(copy)).state).toBe('ready');
}, 180_000);

it('refuses a corrupt backup: the checksum does not match, nothing is left routed or restored', async () => {
  const { name, backupId } = await backedUpTenant('rsbad');
  const { rows } = await p.pool.query<{ path: string }>(
    `SELECT path FROM tenant_backups WHERE backup_id = $1 AND kind = 'filestore'`,
    [backupId],
  );
  await backupSupport.overwriteObject(rows[0]!.path, 'bit rot');

  const copy = (await restore(name, { backupId })).json().restore.name as string;
  await waitForRestore(copy, 'failed');
  expect((await restoreState(copy)).error).toContain(`object ${rows[0]!.path} is corrupt`);
  await expect(workflowOf(copy).result()).rejects.toThrow();
  expect(await routeOfHost(p.pool, hostOf(copy))).toBeNull();
  expect(await databaseExists(hostOf(copy))).toBe(false);
}, 180_000);

it('with the object store down the restore waits, nothing is routed, a second restore of the tenant is refused; then it finishes', async () => {
  const { name } = await backedUpTenant('rsdown');
  await relay.down();
  let copy = '';
  try {
    copy = (await restore(name)).json().restore.name;
    await expect
      .poll(async () => (await workflowOf(copy).describe()).raw.pendingActivities?.[0]?.attempt ?? 0, {
        timeout: 60_000,
        interval: 500,
      })
      .toBeGreaterThanOrEqual(2);
    expect((await restoreState(copy)).state).toBe('restoring');
    expect(await routeOfHost(p.pool, hostOf(copy))).toBeNull();

    const second = await restore(name);
    expect(second.statusCode).toBe(409);
    expect(second.headers['content-type']).toContain('application/problem+json');
    expect(second.json().detail).toBe(
      `a restore of tenant "${name}" is already running (${copy}); wait for it to finish`,
    );
  } finally {
    await relay.up();
  }
  await waitForRestore(copy, 'ready', 120_000);
  expect(await routeOfHost(p.pool, hostOf(copy))).not.toBeNull();
}, 240_000);

it("restores a deprovisioned tenant's backup within its retention, as a new tenant", async () => {
  const { name, backupId } = await backedUpTenant('rsgone');
  await deprovisionNow(p, name);
  await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned', 90_000);
  expect(await databaseExists(hostOf(name))).toBe(false);

  const res = await restore(name, { backupId });
  expect(res.statusCode).toBe(202);
  const copy = res.json().restore.name as string;
  await waitForRestore(copy, 'ready');
  expect(await partnerNames(hostOf(copy))).toContain('Before the backup');
  expect(readFileSync(attachment(copy), 'utf8')).toBe('invoice as it was');

  // an unknown backup is a clear 404, in the API's terms
  const missing = await restore(name, { backupId: `${name}/20000101T000000000Z` });
  expect(missing.statusCode).toBe(404);
  expect(missing.json().detail).toBe(
    `tenant "${name}" has no backup "${name}/20000101T000000000Z" within its retention`,
  );
}, 240_000);

const drill = (tenant: string, id: string) =>
  p.temporal.workflow.execute<(input: { tenant: string }) => Promise<DrillResult>>('drillTenantBackup', {
    workflowId: `drill:${tenant}:${id}`,
    taskQueue: p.cfg.TEMPORAL_TASK_QUEUE,
    args: [{ tenant }],
  });
const scratchLeft = async (tenant: string) =>
  (await p.pool.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${tenant}-d%`])).rows.length +
  (await p.pool.query(`SELECT 1 FROM subdomain_reservations WHERE subdomain LIKE $1`, [`${tenant}-d%`])).rows.length;

it('the drill restores the latest backup into a scratch tenant, finds the figures taken with it, tears it down and lists the result', async () => {
  const { name, backupId } = await backedUpTenant('dr');
  const { rows } = await p.pool.query<{ figures: { counts: Record<string, number>; files: Record<string, number> } }>(
    'SELECT figures FROM tenant_backup_figures WHERE backup_id = $1',
    [backupId],
  );
  // taken with the backup: the dump's record counts, the filestore's files and sizes
  expect(rows[0]!.figures.counts.res_partner).toBeGreaterThanOrEqual(1);
  expect(rows[0]!.figures.files).toEqual({ 'ab/invoice-0001.pdf': 'invoice as it was'.length });
  // changes after the backup do not matter: the drill checks the backup
  await inTenantDb(hostOf(name), (db) => db.query(`INSERT INTO res_partner (name) VALUES ('After the backup')`));

  const result = await drill(name, 'ok');
  expect(result).toMatchObject({ tenant: name, backupId, outcome: 'passed', mismatches: [], error: null });
  expect(result.durationMs).toBeGreaterThan(0);
  expect(await scratchLeft(name)).toBe(0);
  const listed = (await ops(p, 'GET', `/api/ops/tenants/${name}/drills`)).json().items;
  expect(listed[0]).toMatchObject({ outcome: 'passed', backupId, durationMs: result.durationMs });
  expect(mailsTo(p, p.cfg.OPS_ALERT_EMAIL).filter((m) => m.subject.includes(name))).toEqual([]);
}, 180_000);

it('a drill that finds other figures, or cannot restore, alerts the operators and says why', async () => {
  const { name, backupId } = await backedUpTenant('drbad');
  await p.pool.query(
    `UPDATE tenant_backup_figures SET figures = jsonb_set(figures, '{counts,res_partner}', '999') WHERE backup_id = $1`,
    [backupId],
  );
  const mismatch = await drill(name, 'mismatch');
  expect(mismatch.outcome).toBe('mismatch');
  expect(mismatch.mismatches).toEqual([expect.stringMatching(/^res_partner: 999 rows in the backup, \d+ restored$/)]);
  await expect
    .poll(() => mailsTo(p, p.cfg.OPS_ALERT_EMAIL).filter((m) => m.subject.includes(`Backup drill of ${name}`)).length, {
      timeout: 30_000,
    })
    .toBe(1);

  const { rows } = await p.pool.query<{ path: string }>(
    `SELECT path FROM tenant_backups WHERE backup_id = $1 AND kind = 'database'`,
    [backupId],
  );
  await backupSupport.overwriteObject(rows[0]!.path, 'not a dump any more');
  const failed = await drill(name, 'corrupt');
  expect(failed.outcome).toBe('failed');
  expect(failed.error).toContain(`object ${rows[0]!.path} is corrupt`);
  await expect
    .poll(() => mailsTo(p, p.cfg.OPS_ALERT_EMAIL).filter((m) => m.subject.includes(`Backup drill of ${name}`)).length, {
      timeout: 30_000,
    })
    .toBe(2);
  expect(await scratchLeft(name)).toBe(0);
  const listed = (await ops(p, 'GET', `/api/ops/tenants/${name}/drills`)).json().items;
  expect(listed.map((d: DrillResult) => d.outcome)).toEqual(['failed', 'mismatch']);
}, 180_000);

it('the drill compares the dashboards (KPIs, cash flow, alerts) recorded with the backup with those of the restored copy', async () => {
  const { name, backupId } = await backedUpTenant('drdash');
  const figures = async () =>
    (
      await p.pool.query<{ figures: { dashboards: Record<string, { [k: string]: unknown }> | null } }>(
        'SELECT figures FROM tenant_backup_figures WHERE backup_id = $1',
        [backupId],
      )
    ).rows[0]!.figures;
  const today = new Date().toISOString().slice(0, 10);
  // read through the ERP as the portal's dashboards are, as of the backup's day
  const recorded = (await figures()).dashboards!;
  expect(recorded).toMatchObject({
    today,
    kpis: { workspace: name, asOf: today, revenue: expect.any(Number) },
    cashflow: { workspace: name, months: expect.any(Array) },
    alerts: { workspace: name },
  });
  const passed = await drill(name, 'dash-ok');
  expect(passed).toMatchObject({ outcome: 'passed', mismatches: [] });

  // a backup that restores other KPIs than it was taken with is a mismatch, named figure by figure
  const revenue = recorded.kpis!.revenue as number;
  await p.pool.query(
    `UPDATE tenant_backup_figures SET figures = jsonb_set(figures, '{dashboards,kpis,revenue}', '123456.78') WHERE backup_id = $1`,
    [backupId],
  );
  const mismatch = await drill(name, 'dash-mismatch');
  expect(mismatch.outcome).toBe('mismatch');
  expect(mismatch.mismatches).toEqual([
    `dashboards kpis as of ${today}: revenue 123456.78 in the backup, ${revenue} restored`,
  ]);
  expect(await scratchLeft(name)).toBe(0);
  expect((await p.pool.query('SELECT 1 FROM tenants WHERE name LIKE $1', [`${name}-d%`])).rows).toEqual([]);
}, 180_000);

it('each tier has its drill schedule, at the configured interval', async () => {
  const opts = { taskQueue: p.cfg.TEMPORAL_TASK_QUEUE, everyMs: 7 * 86_400_000 };
  const deleteDrillSchedules = async () => {
    for (const tier of ['starter', 'pro', 'enterprise'])
      await p.temporal.schedule
        .getHandle(`backup-drill-${tier}`)
        .delete()
        .catch(() => {});
  };
  // the ids are the same in the whole namespace: a worker another test file started may have made them
  await deleteDrillSchedules();
  try {
    expect(await ensureBackupDrillSchedules(p.temporal, opts)).toEqual({
      'backup-drill-starter': 'created',
      'backup-drill-pro': 'created',
      'backup-drill-enterprise': 'created',
    });
    expect(await ensureBackupDrillSchedules(p.temporal, opts)).toMatchObject({ 'backup-drill-pro': 'exists' });
    expect(await ensureBackupDrillSchedules(p.temporal, { ...opts, everyMs: 86_400_000 })).toMatchObject({
      'backup-drill-pro': 'updated',
    });
    const pro = await p.temporal.schedule.getHandle('backup-drill-pro').describe();
    expect(pro.spec.intervals?.[0]?.every).toBe(86_400_000);
    expect(pro.action).toMatchObject({ type: 'startWorkflow', workflowType: 'drillBackups', args: [{ tier: 'pro' }] });
  } finally {
    await deleteDrillSchedules();
  }
});
