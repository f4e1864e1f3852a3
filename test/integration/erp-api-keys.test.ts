/**
 * The API user's Odoo API key (domain/erp/api-user.ts) and the JSON-2 client (domain/erp/client.ts)
 * on the ERP stand-in: on Odoo 19 the key is made as Odoo makes it (description, make_key, the
 * identity check), stored sealed with its expiry, renewed near its end; the readiness probe and the
 * dashboards read over JSON-2 with it and never over XML-RPC; a wrong or expired key, a write, an
 * unknown method each give the fault the XML-RPC client gives. On 17/18 JSON-2 does not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import {
  API_KEY_DAYS,
  ensureErpApiKey,
  erpApiUserDeps,
  erpClientFor,
  loadErpApiCredentials,
} from '../../domain/erp/api-user.js';
import {
  ErpFault,
  ErpUnreachable,
  createErpClient,
  createJson2Client,
  json2Body,
  openErpSession,
} from '../../domain/erp/client.js';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTenantHealthActivities, probeTenant, type HealthObservation } from '../../activities/tenant-health.js';
import type { PlatformDeps } from '../../activities/deps.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import { queryTenantDb, startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';

let bed: ErpTestBed;
let cfg: Config;
let pool: Pool;
let erp: ErpStandIn;
let t19: TestTenant;
let t18: TestTenant;
let t17: TestTenant;
const deps = () => erpApiUserDeps(cfg, pool, erp.url);
const failure = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('expected a failure'),
    (e: unknown) => e as Error,
  );
const json2 = (t: TestTenant, apiKey: string, login = `api@${t.database}`) =>
  createJson2Client({ baseUrl: erp.url, host: t.host, db: t.database, login, apiKey });
const probe = (t: TestTenant) =>
  probeTenant(
    { erpUrl: erp.url, platformPool: pool, secretsKey: cfg.SECRETS_KEY },
    { host: t.host, tenant: t.name, database: t.database },
  );

beforeAll(async () => {
  bed = await startErpTestBed();
  ({ cfg, pool, erp } = bed);
  t19 = await bed.provision({ tier: 'starter', version: '19' });
  t18 = await bed.provision({ tier: 'starter', version: '18' });
  t17 = await bed.provision({ tier: 'starter', version: '17' });
});
afterAll(() => bed?.close());

describe('the API key of a 19 tenant', () => {
  it('is made with the API user: stored sealed with a 90-day expiry, hashed in the tenant database, and never in the clear', async () => {
    const credentials = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    expect(credentials.apiKey).toMatch(/^[0-9a-f]{40}$/);
    const days = (credentials.apiKeyExpiresAt!.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(API_KEY_DAYS - 2);
    expect(days).toBeLessThanOrEqual(API_KEY_DAYS);
    const raw = await pool.query<{ row: string }>(
      'SELECT t::text AS row FROM tenant_erp_credentials t WHERE tenant = $1',
      [t19.name],
    );
    expect(raw.rows[0]!.row).not.toContain(credentials.apiKey);
    const keys = await queryTenantDb<{ login: string; index: string; key: string; expiration_date: Date }>(
      cfg,
      t19.database,
      'SELECT u.login, k.index, k.key, k.expiration_date FROM res_users_apikeys k JOIN res_users u ON u.id = k.user_id',
    );
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ login: credentials.login, index: credentials.apiKey!.slice(0, 8) });
    expect(keys[0]!.key).toMatch(/^\$pbkdf2-sha512\$6000\$/);
    // the API user is in the group that allows 90-day keys, made by the tenant's admin
    const groups = await queryTenantDb<{ name: string; api_key_duration: number }>(
      cfg,
      t19.database,
      `SELECT g.name, g.api_key_duration FROM res_groups g JOIN res_groups_users_rel r ON r.gid = g.id JOIN res_users u ON u.id = r.uid
        WHERE u.login = $1 AND g.api_key_duration > 0`,
      [credentials.login],
    );
    expect(groups).toEqual([{ name: 'Platform API keys', api_key_duration: 90 }]);
  });

  it('the readiness probe proves the tenant database answers over JSON-2 with the key, and the dashboards read over JSON-2 only', async () => {
    const before = erp.requests(t19.host);
    const seen = await probe(t19);
    expect(seen.healthy).toBe(true);
    expect(seen.detail).toContain('answers over JSON-2');

    const service = createDashboardService({ pool, config: cfg });
    const kpis = await service.kpis(t19.workspace);
    const alerts = await service.alerts(t19.workspace);
    const cashflow = await service.cashflow(t19.workspace, { months: 3 });
    expect(kpis.currency).toBeTruthy();
    expect(alerts.erpVersion).toBe('19');
    expect(cashflow.months).toHaveLength(3);
    // the same figures as the password over XML-RPC gives
    const credentials = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    const viaKey = erpClientFor({ baseUrl: erp.url, host: t19.host, db: t19.database, version: 19 }, credentials);
    const viaPassword = createErpClient({
      baseUrl: erp.url,
      host: t19.host,
      db: t19.database,
      login: credentials.login,
      password: credentials.password,
    });
    const read = (c: typeof viaKey) =>
      c.executeKw('account.move', 'search_read', [[['state', '=', 'posted']], ['name', 'amount_total']], {
        order: 'id',
        limit: 5,
      });
    const after = erp.requests(t19.host);
    expect(await read(viaKey)).toEqual(await read(viaPassword));
    expect((after['/json/2'] ?? 0) - (before['/json/2'] ?? 0)).toBeGreaterThanOrEqual(4);
    expect((after['/xmlrpc/2/object'] ?? 0) - (before['/xmlrpc/2/object'] ?? 0)).toBe(0);
  });

  it('a wrong key is access denied (fault 3); a write is an access error (fault 4); an unknown method fault 1; bad parameters fault 2', async () => {
    const credentials = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    const wrong = await failure(json2(t19, 'f'.repeat(40)).executeKw('res.partner', 'search', [[]]));
    expect(wrong).toBeInstanceOf(ErpFault);
    expect((wrong as ErpFault).code).toBe(3);
    const api = json2(t19, credentials.apiKey!);
    expect(await api.authenticate()).toBeGreaterThan(2);
    const write = (await failure(api.executeKw('res.partner', 'write', [[1], { name: 'x' }]))) as ErpFault;
    expect([write.name, write.code]).toEqual(['ErpFault', 4]);
    const unknown = (await failure(api.executeKw('res.partner', 'no_such_method', [], {}))) as ErpFault;
    expect([unknown.name, unknown.code]).toEqual(['ErpFault', 1]);
    const nomodel = (await failure(api.executeKw('no.such.model', 'search', [[]]))) as ErpFault;
    expect(nomodel.code).toBe(1);
    const bad = (await failure(api.executeKw('res.partner', 'search_read', [], { nonsense: 1 }))) as ErpFault;
    expect(bad.code).toBe(2);
    // the key also works in XML-RPC's password slot
    expect(
      await createErpClient({
        baseUrl: erp.url,
        host: t19.host,
        db: t19.database,
        login: credentials.login,
        password: credentials.apiKey!,
      }).authenticate(),
    ).toBeGreaterThan(2);
  });

  it('an expired key is refused (fault 3) and the probe says so; the next ensure renews it', async () => {
    const credentials = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    await queryTenantDb(
      cfg,
      t19.database,
      "UPDATE res_users_apikeys SET expiration_date = now() at time zone 'utc' - interval '1 minute'",
    );
    const expired = (await failure(json2(t19, credentials.apiKey!).authenticate())) as ErpFault;
    expect(expired.code).toBe(3);
    const seen = await probe(t19);
    expect(seen.healthy).toBe(false);
    expect(seen.detail).toContain('refused the API key');
    expect(seen.detail).not.toContain(credentials.apiKey!);

    expect((await ensureErpApiKey(deps(), { tenant: t19.name, database: t19.database })).outcome).toBe('renewed');
    const renewed = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    expect(renewed.apiKey).not.toBe(credentials.apiKey);
    expect((await probe(t19)).healthy).toBe(true);
  });

  it('is renewed when fewer than 30 days remain, and left alone before; the old key works until its own expiry', async () => {
    const first = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    const stillValid = await ensureErpApiKey(deps(), {
      tenant: t19.name,
      database: t19.database,
      now: new Date(first.apiKeyExpiresAt!.getTime() - 31 * 86_400_000),
    });
    expect(stillValid.outcome).toBe('valid');
    expect((await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!.apiKey).toBe(first.apiKey);

    const due = await ensureErpApiKey(deps(), {
      tenant: t19.name,
      database: t19.database,
      now: new Date(first.apiKeyExpiresAt!.getTime() - 29 * 86_400_000),
    });
    expect(due.outcome).toBe('renewed');
    const second = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    expect(second.apiKey).not.toBe(first.apiKey);
    expect(await json2(t19, second.apiKey!).authenticate()).toBeGreaterThan(2);
    expect(await json2(t19, first.apiKey!).authenticate()).toBeGreaterThan(2);
  });

  it('the Ready probe activity renews a key that has fewer than 30 days left, and leaves a younger one alone', async () => {
    const activities = createTenantHealthActivities({ config: cfg, platformPool: pool } as unknown as PlatformDeps);
    const run = () =>
      new MockActivityEnvironment().run(activities.probeTenantHealth, {
        host: t19.host,
        tenant: t19.name,
        database: t19.database,
        windowMs: 0,
        intervalMs: 1_000,
      }) as Promise<HealthObservation>;
    const first = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    expect((await run()).healthy).toBe(true);
    expect((await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!.apiKey).toBe(first.apiKey);

    await pool.query(
      "UPDATE tenant_erp_credentials SET api_key_expires_at = now() + interval '10 days' WHERE tenant = $1",
      [t19.name],
    );
    const seen = await run();
    expect(seen.healthy).toBe(true);
    const renewed = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    expect(renewed.apiKey).not.toBe(first.apiKey);
    expect((renewed.apiKeyExpiresAt!.getTime() - Date.now()) / 86_400_000).toBeGreaterThan(API_KEY_DAYS - 2);

    // a 19 tenant that turned Ready before API keys existed gets one at its next probe
    await pool.query(
      'UPDATE tenant_erp_credentials SET api_key_encrypted = NULL, api_key_expires_at = NULL WHERE tenant = $1',
      [t19.name],
    );
    expect((await probe(t19)).detail).toContain('has no API key yet');
    expect((await run()).healthy).toBe(true);
    expect((await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!.apiKey).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe('the API key flow as Odoo has it', () => {
  it('without the group a non-admin user may only make 1-day keys; the identity check refuses a wrong password', async () => {
    const { password, login } = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t18.name))!;
    const session = await openErpSession({ baseUrl: erp.url, host: t18.host, db: t18.database, login, password });
    const tooLong = (await failure(
      session.callKw('res.users.apikeys.description', 'web_save', [[], { name: 'x', duration: '90' }, {}]),
    )) as ErpFault;
    expect([tooLong.code, tooLong.message]).toEqual([
      1,
      "builtins.ValueError: Wrong value for res.users.apikeys.description.duration: '90'",
    ]);
    // as on real Odoo 18: the wizard's create takes ids first over RPC
    const asModelMethod = (await failure(
      session.callKw('res.users.apikeys.description', 'create', [{ name: 'x', duration: '1' }]),
    )) as ErpFault;
    expect(asModelMethod.message).toBe(
      "builtins.TypeError: APIKeyDescription.create() missing 1 required positional argument: 'vals_list'",
    );
    const id = await session.callKw<number>('res.users.apikeys.description', 'create', [
      [],
      { name: 'x', duration: '1' },
    ]);
    const check = await session.callKw<{ res_model: string; res_id: number }>(
      'res.users.apikeys.description',
      'make_key',
      [[id]],
    );
    expect(check.res_model).toBe('res.users.identitycheck');
    await session.callKw('res.users.identitycheck', 'write', [[check.res_id], { password: 'not-the-password' }]);
    const refused = (await failure(
      session.callKw('res.users.identitycheck', 'run_check', [[check.res_id]]),
    )) as ErpFault;
    expect([refused.code, refused.message]).toEqual([
      2,
      'Incorrect Password, try again or click on Forgot Password to reset your password.',
    ]);
  });

  it('on 18 the key is made on demand (force) and authenticates over XML-RPC; JSON-2 does not exist there (404)', async () => {
    expect((await ensureErpApiKey(deps(), { tenant: t18.name, database: t18.database })).outcome).toBe('not-used');
    expect((await ensureErpApiKey(deps(), { tenant: t18.name, database: t18.database, force: true })).outcome).toBe(
      'created',
    );
    const credentials = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t18.name))!;
    const viaKey = createErpClient({
      baseUrl: erp.url,
      host: t18.host,
      db: t18.database,
      login: credentials.login,
      password: credentials.apiKey!,
    });
    expect(await viaKey.authenticate()).toBeGreaterThan(2);
    expect(((await failure(viaKey.executeKw('res.partner', 'write', [[1], { name: 'x' }]))) as ErpFault).code).toBe(4);
    // the factory keeps XML-RPC before 19 even with a key
    expect(
      await erpClientFor({ baseUrl: erp.url, host: t18.host, db: t18.database, version: 18 }, credentials).executeKw(
        'res.partner',
        'search_count',
        [[]],
      ),
    ).toBeGreaterThan(0);
    const missing = await failure(json2(t18, credentials.apiKey!).authenticate());
    expect(missing).toBeInstanceOf(ErpUnreachable);
    expect((missing as ErpUnreachable).reason).toBe('no-route');
  });

  it("on 19 the identity check reads the password from run_check's context: a written password is dropped (store=False)", async () => {
    const { password, login } = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t19.name))!;
    const session = await openErpSession({ baseUrl: erp.url, host: t19.host, db: t19.database, login, password });
    const keyCheck = async () => {
      const [saved] = await session.callKw<{ id: number }[]>('res.users.apikeys.description', 'web_save', [
        [],
        { name: 'x', duration: '1' },
        {},
      ]);
      return (await session.callKw<{ res_id: number }>('res.users.apikeys.description', 'make_key', [[saved!.id]]))
        .res_id;
    };
    const written = await keyCheck();
    await session.callKw('res.users.identitycheck', 'write', [[written], { password }]);
    const refused = (await failure(session.callKw('res.users.identitycheck', 'run_check', [[written]]))) as ErpFault;
    expect(refused.message).toBe('Incorrect Password, try again or click on Forgot Password to reset your password.');
    const inContext = await keyCheck();
    const shown = await session.callKw<{ context: { default_key: string } }>(
      'res.users.identitycheck',
      'run_check',
      [[inContext]],
      { context: { password } },
    );
    expect(shown.context.default_key).toMatch(/^[0-9a-f]{40}$/);
  });

  it("on 17 keys never expire, as in Odoo 17's wizard (name only, the ORM's create): the platform makes none, even on demand", async () => {
    expect((await ensureErpApiKey(deps(), { tenant: t17.name, database: t17.database, force: true })).outcome).toBe(
      'not-used',
    );
    expect((await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t17.name))!.apiKey).toBeNull();
    const { password, login } = (await loadErpApiCredentials(pool, cfg.SECRETS_KEY, t17.name))!;
    const session = await openErpSession({ baseUrl: erp.url, host: t17.host, db: t17.database, login, password });
    const duration = (await failure(
      session.callKw('res.users.apikeys.description', 'create', [{ name: 'x', duration: '90' }]),
    )) as ErpFault;
    expect(duration.message).toBe(
      "builtins.ValueError: Invalid field 'duration' on model 'res.users.apikeys.description'",
    );
    const id = await session.callKw<number>('res.users.apikeys.description', 'create', [{ name: 'x' }]);
    const check = await session.callKw<{ res_id: number }>('res.users.apikeys.description', 'make_key', [[id]]);
    await session.callKw('res.users.identitycheck', 'write', [[check.res_id], { password }]);
    const shown = await session.callKw<{ context: { default_key: string } }>('res.users.identitycheck', 'run_check', [
      [check.res_id],
    ]);
    const viaKey = createErpClient({
      baseUrl: erp.url,
      host: t17.host,
      db: t17.database,
      login,
      password: shown.context.default_key,
    });
    expect(await viaKey.authenticate()).toBeGreaterThan(2);
    const group = (await failure(
      session.callKw('res.groups', 'search_read', [[]], { fields: ['api_key_duration'] }),
    )) as ErpFault;
    expect(group.message).toMatch(/Invalid field 'api_key_duration' on model 'res.groups'/);
    // a model the database does not have: Odoo 17's call_kw answers the registry's KeyError (18+: 404)
    expect((await failure(session.callKw('auth.oauth.nothing', 'search_read', [[]]))).message).toBe(
      'builtins.KeyError: auth.oauth.nothing',
    );
  });
});

describe('json2Body', () => {
  it('binds positional arguments to the named parameters; record methods take ids first', () => {
    expect(json2Body('search_read', [[['a', '=', 1]], ['name']], { limit: 3 })).toEqual({
      domain: [['a', '=', 1]],
      fields: ['name'],
      limit: 3,
    });
    expect(json2Body('write', [[1, 2], { name: 'x' }], {})).toEqual({ ids: [1, 2], vals: { name: 'x' } });
    expect(json2Body('read', [[7]], { fields: ['name'] })).toEqual({ ids: [7], fields: ['name'] });
    expect(json2Body('get_param', ['web.base.url'], {})).toEqual({ key: 'web.base.url' });
    expect(() => json2Body('action_post', [[1]], {})).toThrow(/parameter names of action_post/);
    expect(() => json2Body('search', [[], 0, 1, 'id', 'extra'], {})).toThrow(/4 positional parameters/);
  });
});
