/**
 * A tenant whose template database is missing (§3.2, §7), on the real platform with the ERP
 * stand-in: the reconcile makes the route, then has the ERP install the tier's modules from scratch
 * into the tenant's database (a long, heartbeating activity of its own); meanwhile the tenant's
 * /web/health answers 503 and Ready=False says why; then the tenant is Ready as a clone would be,
 * and the template is made from that first install so the next tenant clones again. Two tenants of
 * the same missing tier × version install side by side; a worker killed mid-install has the
 * install retried on another worker.
 *
 * The ERP here has a PostgreSQL server of its own, started empty (no template at all), so no other
 * test's templates are touched. The stand-in's install is slowed to a few hundred ms per module,
 * as real Odoo takes seconds per module, so the install can be watched; the readiness deadline
 * (3 s) is shorter than an install.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { temporal as proto } from '@temporalio/proto';
import { freePort, startPostgres, type PostgresServer } from '../../scripts/local-servers.js';
import type { TenantStatus } from '../../domain/tenants/types.js';
import { tempDir } from '../support/env.js';
import {
  applyTenant,
  condition,
  configEnv,
  health,
  isReady,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let erpServer: PostgresServer;
let erpAdmin: pg.Pool;
let p: TenantPlatform;
let child: ChildProcess | undefined;

beforeAll(async () => {
  erpServer = await startPostgres({ dir: tempDir('erp-postgres'), port: await freePort() });
  erpAdmin = new pg.Pool({ connectionString: erpServer.urlFor('postgres'), max: 2 });
  erpAdmin.on('connect', (client) => client.on('error', () => {}));
  p = await startTenantPlatform({
    ERP_DATABASE_URL: erpServer.urlFor('postgres'),
    ERP_STANDIN_MODULE_INSTALL_TIME: '600ms',
    TENANT_READY_DEADLINE: '3s',
    TENANT_RECONCILE_BACKOFF_MAX: '1s',
  });
}, 120_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await p?.close();
  // the platform's pools end their connections after `end()` resolves: stop the server once they are gone
  for (let i = 0; i < 100 && erpAdmin && (await otherConnections()) > 0; i++) await sleep(100);
  await erpAdmin?.end();
  await sleep(500); // (pg's Pool.end resolves before its last socket has closed)
  await erpServer?.stop();
});

const otherConnections = async () =>
  (
    await erpAdmin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    )
  ).rows[0]!.n;

const hostOf = (name: string) => `${name}.${p.cfg.TENANT_DOMAIN}`;

/** A query on a database of the ERP's server. */
async function onDb(database: string, sql: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: erpServer.urlFor(database) });
  await c.connect();
  try {
    return (await c.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

/** What a clone and a from-scratch install must have alike, and what must differ (identity, admin password). */
async function erpContents(database: string) {
  const one = async (sql: string) => Object.values((await onDb(database, sql))[0]!)[0];
  return {
    modules: await one(`SELECT string_agg(name, ',' ORDER BY name) FROM ir_module_module WHERE state = 'installed'`),
    moves: await one('SELECT count(*)::int FROM account_move'),
    partners: await one('SELECT count(*)::int FROM res_partner'),
    eventRules: await one('SELECT count(*)::int FROM base_automation'),
    apiUsers: await one(`SELECT count(*)::int FROM res_users WHERE login LIKE 'api@%'`),
    uuid: await one(`SELECT value FROM ir_config_parameter WHERE key = 'database.uuid'`),
    secret: await one(`SELECT value FROM ir_config_parameter WHERE key = 'database.secret'`),
    adminPassword: await one(`SELECT password FROM res_users WHERE login = 'admin'`),
  };
}

const databasesLike = async (pattern: string) =>
  (await erpAdmin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [pattern])).rows
    .map((r) => r.datname)
    .sort();

type HistoryEvent = proto.api.history.v1.IHistoryEvent;
const decoded = (data: Uint8Array | null | undefined) => JSON.parse(Buffer.from(data!).toString('utf8')) as unknown;
const seconds = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) + (d?.nanos ?? 0) / 1e9;

/** The tenant's install activity in its history: when scheduled (with its summary and timeouts), started, completed. */
async function installInHistory(name: string) {
  const { events } = await p.temporal.workflow.getHandle(`tenant:${name}`).fetchHistory();
  const all = events ?? [];
  const scheduled = all.find(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'installTenantDatabase',
  ) as HistoryEvent;
  const id = Number(scheduled.eventId);
  const at = (e: HistoryEvent | undefined) => (e ? seconds(e.eventTime) * 1000 : NaN);
  const started = all.find((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === id);
  const completed = all.find((e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === id);
  return {
    summary: decoded(scheduled.userMetadata?.summary?.data) as string,
    heartbeatTimeoutS: seconds(scheduled.activityTaskScheduledEventAttributes!.heartbeatTimeout),
    attempt: started?.activityTaskStartedEventAttributes?.attempt ?? 0,
    startedAt: at(started),
    completedAt: at(completed),
  };
}

/** The heartbeat details of the tenant's running install (undefined when none runs). */
async function installHeartbeat(name: string): Promise<{ attempt: number; progress: string } | undefined> {
  const { raw } = await p.temporal.workflow.getHandle(`tenant:${name}`).describe();
  const pending = raw.pendingActivities?.find((a) => a.activityType?.name === 'installTenantDatabase');
  const payload = pending?.heartbeatDetails?.payloads?.[0];
  return payload ? (decoded(payload.data) as { attempt: number; progress: string }) : undefined;
}

it(
  'installs the tier from scratch when its template is missing: 503 and why meanwhile, then Ready as a clone, and the template made for the next tenant',
  { timeout: 180_000 },
  async () => {
    const name = uniqueTenant('scratch');
    const host = hostOf(name);
    const applied = Date.now();
    expect(await applyTenant(p, name, { tier: 'pro', erpVersion: '17' })).toBe('created');

    // while the install runs: the route is up, the database is not; Ready says why; the activity heartbeats its progress
    const installing = await waitForStatus(p, name, (s) => s.currentStep === 'install-database');
    expect(installing.resources.route).toMatchObject({ synced: 'True', state: 'Created' });
    expect(installing.resources.database).toMatchObject({
      externalName: host,
      synced: 'False',
      state: 'Pending',
      message: 'installing the pro module set from scratch (template database "erp_tpl_pro_17" does not exist)',
    });
    expect(condition(installing, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Creating',
      message: expect.stringContaining('/web/health answers 503 until it is done'),
    });
    // (the database appears under its install name once the activity has begun)
    await expect.poll(async () => (await health(p, host)).detail, { timeout: 30_000 }).toContain('being installed');
    expect(await health(p, host)).toEqual({
      healthy: false,
      httpStatus: 503,
      detail: `GET /web/health answered 503: database "${host}" is being installed from scratch`,
    });
    await expect
      .poll(async () => (await installHeartbeat(name))?.progress ?? '', { timeout: 30_000 })
      .toMatch(/^loading module \w+ \(\d+\/11\)$/);

    const ready = await waitForStatus(p, name, isReady, 120_000);
    const fromScratchMs = Date.now() - applied;
    expect(ready.phase).toBe('Ready');
    expect(condition(ready, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });
    expect(ready.resources.database).toMatchObject({
      synced: 'True',
      state: 'Created',
      message: 'installed from scratch (template erp_tpl_pro_17 was missing)',
    });
    expect(ready.steps.find((s) => s.step === 'install-database')).toMatchObject({
      outcome: 'ok',
      message: expect.stringMatching(/^installed in \d+s; template erp_tpl_pro_17 made from it in \d+ ms$/),
    });
    expect(ready.resources.apiUser).toMatchObject({ synced: 'True', state: 'Created' });
    expect(await health(p, host)).toMatchObject({ healthy: true, httpStatus: 200 });
    // its own step in the history: summary, heartbeat timeout, one attempt
    const install = await installInHistory(name);
    expect(install.summary).toBe(`Install the pro modules into ${host} from scratch (no template erp_tpl_pro_17)`);
    expect(install.heartbeatTimeoutS).toBe(30);
    expect(install.attempt).toBe(1);
    expect(install.completedAt - install.startedAt).toBeGreaterThan(10 * 600 - 100);

    // the template, made from that install, and nothing half-made left over
    const template = await erpAdmin.query(
      `SELECT datistemplate, shobj_description(oid, 'pg_database') AS info FROM pg_database WHERE datname = 'erp_tpl_pro_17'`,
    );
    expect(template.rows[0]).toMatchObject({ datistemplate: true });
    expect(JSON.parse(template.rows[0].info as string)).toMatchObject({ plana: 'erp-template' });
    expect(await databasesLike('%\\_\\_%')).toEqual([]);

    // the next tenant of that tier × version clones again, and has what the installed one has
    const next = uniqueTenant('clone');
    const nextApplied = Date.now();
    expect(await applyTenant(p, next, { tier: 'pro', erpVersion: '17' })).toBe('created');
    const cloned = await waitForStatus(p, next, isReady, 60_000);
    const cloneMs = Date.now() - nextApplied;
    expect(cloned.resources.database.message).toBe('cloned from erp_tpl_pro_17');
    expect(cloned.steps.some((s) => s.step === 'install-database')).toBe(false);
    const [installed, clone, tpl] = await Promise.all([
      erpContents(host),
      erpContents(hostOf(next)),
      erpContents('erp_tpl_pro_17'),
    ]);
    const alike = ({ modules, moves, partners, eventRules, apiUsers }: typeof installed) => ({
      modules,
      moves,
      partners,
      eventRules,
      apiUsers,
    });
    expect(alike(installed)).toEqual(alike(clone));
    expect(installed.modules).toContain('sale');
    expect(installed.eventRules).toBeGreaterThan(0);
    expect(installed.apiUsers).toBe(1);
    // each has its own identity and its own admin password (the template keeps ERP_ADMIN_PASSWORD's)
    expect(new Set([installed.uuid, clone.uuid, tpl.uuid]).size).toBe(3);
    expect(new Set([installed.secret, clone.secret, tpl.secret]).size).toBe(3);
    expect(new Set([installed.adminPassword, clone.adminPassword, tpl.adminPassword]).size).toBe(3);
    console.log(
      `stand-in: Ready from scratch in ${(fromScratchMs / 1000).toFixed(1)} s (11 modules at 600 ms), by clone in ${(cloneMs / 1000).toFixed(1)} s`,
    );
  },
);

it('two tenants of the same missing tier × version applied together install side by side; one makes the template', async () => {
  const names = [uniqueTenant('pair'), uniqueTenant('pair')];
  await Promise.all(
    names.map(async (name) =>
      expect(await applyTenant(p, name, { tier: 'starter', erpVersion: '19' })).toBe('created'),
    ),
  );
  const ready = await Promise.all(names.map((name) => waitForStatus(p, name, isReady, 120_000)));
  for (const status of ready)
    expect(status.resources.database.message).toBe('installed from scratch (template erp_tpl_starter_19 was missing)');
  const installSteps = ready.map(
    (s: TenantStatus) => s.steps.find((step) => step.step === 'install-database')!.message,
  );
  expect(installSteps.filter((m) => m.includes('template erp_tpl_starter_19 made from it'))).toHaveLength(1);
  // neither waited for the other: the two installs ran at the same time
  const [a, b] = await Promise.all(names.map(installInHistory));
  expect(a!.startedAt).toBeLessThan(b!.completedAt);
  expect(b!.startedAt).toBeLessThan(a!.completedAt);
  expect(await databasesLike('erp\\_tpl\\_starter\\_19%')).toEqual(['erp_tpl_starter_19']);
  expect(await databasesLike('%\\_\\_%')).toEqual([]);
  for (const name of names) expect(await health(p, hostOf(name))).toMatchObject({ healthy: true, httpStatus: 200 });
});

it(
  'a worker killed mid-install: the install is retried on another worker after the heartbeat timeout, and the tenant turns Ready',
  { timeout: 240_000 },
  async () => {
    await p.stopWorker();
    child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/worker.ts')], {
      cwd: root,
      env: { ...(process.env as Record<string, string>), ...configEnv(p.cfg), LOG_LEVEL: 'error' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const name = uniqueTenant('killed');
    const host = hostOf(name);
    expect(await applyTenant(p, name, { tier: 'enterprise', erpVersion: '18' })).toBe('created');
    // caught in the middle of its 16 modules (the tier's 15 and the sign-in module)
    await expect
      .poll(async () => (await installHeartbeat(name))?.progress ?? '', { timeout: 150_000 })
      .toMatch(/^loading module \w+ \([3-9]\/16\)$/);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    child = undefined;
    expect(await databasesLike(`${host}%`)).toEqual([`${host}__installing`]);
    expect((await health(p, host)).httpStatus).toBe(503);

    await p.startWorker();
    const ready = await waitForStatus(p, name, isReady, 180_000);
    expect(ready.resources.database.message).toBe(
      'installed from scratch (template erp_tpl_enterprise_18 was missing)',
    );
    expect(ready.steps.find((s) => s.step === 'install-database')?.message).toMatch(/^installed in \d+s \(attempt 2\)/);
    expect((await installInHistory(name)).attempt).toBe(2);
    expect(await databasesLike(`${host}%`)).toEqual([host]);
    expect(await health(p, host)).toMatchObject({ healthy: true, httpStatus: 200 });
  },
);
