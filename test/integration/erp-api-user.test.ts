/**
 * The tenant's dedicated ERP API user (§5.5), made through Odoo's own models over XML-RPC as the
 * tenant's admin, on real tenant databases behind the ERP stand-in; and the Odoo semantics the
 * stand-in enforces the way real Odoo 18 does (groups by external id, ACLs, company rules,
 * required fields).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import {
  ensureErpApiUser,
  erpApiUserDeps,
  loadErpCredentials,
  tenantAdminPassword,
} from '../../domain/erp/api-user.js';
import { type ErpFault, createErpClient } from '../../domain/erp/client.js';
import {
  cloneTenantDatabase,
  dropTenantDatabase,
  templateDatabaseName,
  tenantHostname,
} from '../../domain/erp/tenant-database.js';
import { verifyOdooPassword } from '../../domain/erp/odoo-password.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import { createWorkspaceWithTenant, queryTenantDb, startErpTestBed, type ErpTestBed } from '../support/erp-tenant.js';

let bed: ErpTestBed;
let cfg: Config;
let pool: Pool;
let admin: Pool;
let erp: ErpStandIn;
const deps = () => erpApiUserDeps(cfg, pool, erp.url);
const fault = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('expected an XML-RPC fault'),
    (e: unknown) => e as ErpFault,
  );

async function tenantWithDatabase(version: '18' | '19' = '18') {
  const tenant = await createWorkspaceWithTenant(pool, { tier: 'starter', version });
  const database = tenantHostname(tenant, cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(admin, { database, template: templateDatabaseName('starter', version) });
  await pool.query('INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, $3, $1)', [
    database,
    tenant,
    `plana-odoo-${version}`,
  ]);
  return { tenant, database };
}

const apiUsers = (database: string, login: string) =>
  queryTenantDb<{
    id: number;
    password: string;
    active: boolean;
    groups: string[];
    companies: number[];
    company_id: number;
    partner: string;
  }>(
    cfg,
    database,
    `SELECT u.id, u.password, u.active, u.company_id, p.name AS partner,
            ARRAY(SELECT d.module || '.' || d.name FROM res_groups_users_rel r JOIN ir_model_data d ON d.model = 'res.groups' AND d.res_id = r.gid WHERE r.uid = u.id ORDER BY 1) AS groups,
            ARRAY(SELECT cid FROM res_company_users_rel r WHERE r.user_id = u.id ORDER BY 1) AS companies
       FROM res_users u JOIN res_partner p ON p.id = u.partner_id WHERE login = $1`,
    [login],
  );

const client = (database: string, login: string, password: string) =>
  createErpClient({ baseUrl: erp.url, host: database, db: database, login, password });

beforeAll(async () => {
  bed = await startErpTestBed();
  ({ cfg, pool, admin, erp } = bed);
});
afterAll(() => bed?.close());

describe('ensureErpApiUser', () => {
  it('creates one API user through the ERP: internal user + accounting read-only by external id, linked to the companies, a long random password', async () => {
    const { tenant, database } = await tenantWithDatabase();
    const result = await ensureErpApiUser(deps(), { tenant, database });
    expect(result).toEqual({ login: `api@${database}`, created: true, apiKey: 'not-used' });

    const credentials = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!;
    expect(credentials.login).toBe(result.login);
    expect(credentials.password.length).toBeGreaterThanOrEqual(40);

    const users = await apiUsers(database, result.login);
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ active: true, company_id: 1, companies: [1, 2], partner: 'Platform API' });
    expect(users[0]!.groups).toEqual(['account.group_account_readonly', 'base.group_user']);
    expect(await verifyOdooPassword(credentials.password, users[0]!.password)).toBe(true);
  });

  it('gives a user that reads accounting and cannot write: AccessError (fault 4) on res.partner and account.move', async () => {
    const { tenant, database } = await tenantWithDatabase();
    await ensureErpApiUser(deps(), { tenant, database });
    const api = client(
      database,
      ...(Object.values((await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!) as [string, string]),
    );
    expect((await api.executeKw<number[]>('account.move', 'search', [[]])).length).toBeGreaterThan(10);
    const partner = await fault(api.executeKw('res.partner', 'create', [{ name: 'Not allowed' }]));
    expect(partner.code).toBe(4);
    expect(partner.faultString).toContain("You are not allowed to create 'Contact' (res.partner) records.");
    const move = await fault(api.executeKw('account.move', 'write', [[1], { ref: 'x' }]));
    expect(move.code).toBe(4);
    expect(move.faultString).toContain("You are not allowed to modify 'Journal Entry' (account.move) records.");
    expect(move.faultString).toContain('Accounting / Billing');
    // the groups' external ids are for administrators only
    expect((await fault(api.executeKw('ir.model.data', 'search', [[]]))).code).toBe(4);
  });

  it("signs in with the template's admin password once, then gives the tenant's admin its own", async () => {
    const { tenant, database } = await tenantWithDatabase();
    await ensureErpApiUser(deps(), { tenant, database });
    await expect(client(database, 'admin', cfg.ERP_ADMIN_PASSWORD).authenticate()).rejects.toMatchObject({ code: 3 });
    expect(await client(database, 'admin', tenantAdminPassword(cfg.SECRETS_KEY, database)).authenticate()).toBe(2);
    const other = await tenantWithDatabase();
    expect(tenantAdminPassword(cfg.SECRETS_KEY, other.database)).not.toBe(
      tenantAdminPassword(cfg.SECRETS_KEY, database),
    );
  });

  it('uses group_ids on 19', async () => {
    const { tenant, database } = await tenantWithDatabase('19');
    const { login } = await ensureErpApiUser(deps(), { tenant, database });
    expect((await apiUsers(database, login))[0]!.groups).toEqual(['account.group_account_readonly', 'base.group_user']);
  });

  it('never stores the password in plaintext, in the platform or in the ERP', async () => {
    const { tenant, database } = await tenantWithDatabase();
    const { login } = await ensureErpApiUser(deps(), { tenant, database });
    const { password } = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!;
    const stored = await pool.query<{ password_encrypted: string }>(
      'SELECT password_encrypted FROM tenant_erp_credentials WHERE tenant = $1',
      [tenant],
    );
    expect(stored.rows[0]!.password_encrypted).not.toContain(password);
    expect(stored.rows[0]!.password_encrypted).toMatch(/^v1\./);
    const [user] = await apiUsers(database, login);
    expect(user!.password).not.toContain(password);
    expect(user!.password).toMatch(/^\$pbkdf2-sha512\$/);
  });

  it('is idempotent: a second run creates no second user and keeps the working password', async () => {
    const { tenant, database } = await tenantWithDatabase();
    await ensureErpApiUser(deps(), { tenant, database });
    const before = await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant);
    const again = await ensureErpApiUser(deps(), { tenant, database });
    expect(again.created).toBe(false);
    expect(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant)).toEqual(before);
    expect(await apiUsers(database, again.login)).toHaveLength(1);
  });

  it('is safe when two provisioning runs ensure the user at once', async () => {
    const { tenant, database } = await tenantWithDatabase();
    const results = await Promise.all([
      ensureErpApiUser(deps(), { tenant, database }),
      ensureErpApiUser(deps(), { tenant, database }),
    ]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await apiUsers(database, results[0]!.login)).toHaveLength(1);
  });

  it('re-creates the user with the stored password when the database was re-cloned', async () => {
    const { tenant, database } = await tenantWithDatabase();
    await ensureErpApiUser(deps(), { tenant, database });
    const before = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!;
    await dropTenantDatabase(admin, database);
    await cloneTenantDatabase(admin, { database, template: templateDatabaseName('starter', '18') });
    expect((await ensureErpApiUser(deps(), { tenant, database })).created).toBe(true);
    expect(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant)).toEqual(before);
    const [user] = await apiUsers(database, before.login);
    expect(await verifyOdooPassword(before.password, user!.password)).toBe(true);
  });

  it('names the tenant database when it does not exist, and stores nothing', async () => {
    const tenant = await createWorkspaceWithTenant(pool, { tier: 'starter', version: '18' });
    const database = tenantHostname(tenant, cfg.TENANT_DOMAIN);
    await pool.query('INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, $3, $1)', [
      database,
      tenant,
      'plana-odoo-18',
    ]);
    await expect(ensureErpApiUser(deps(), { tenant, database })).rejects.toThrow(
      `tenant database ${database} does not exist`,
    );
    expect(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant)).toBeNull();
  });
});

describe('cloning a tenant database as Odoo duplicates one', () => {
  it('gives the clone its own database.uuid and database.secret and a copy of the template filestore', async () => {
    const template = templateDatabaseName('starter', '18');
    const root = mkdtempSync(path.join(os.tmpdir(), 'filestore-'));
    mkdirSync(path.join(root, template, 'ab'), { recursive: true });
    writeFileSync(path.join(root, template, 'ab', 'abcdef'), 'attachment');
    const params = (db: string) =>
      queryTenantDb<{ key: string; value: string }>(
        cfg,
        db,
        `SELECT key, value FROM ir_config_parameter WHERE key IN ('database.uuid', 'database.secret') ORDER BY key`,
      );
    const tenant = await createWorkspaceWithTenant(pool, { tier: 'starter', version: '18' });
    const database = tenantHostname(tenant, cfg.TENANT_DOMAIN);
    expect(await cloneTenantDatabase(admin, { database, template, filestoreRoot: root })).toBe('created');
    const [tplSecret, tplUuid] = await params(template);
    const [secret, uuid] = await params(database);
    expect(uuid!.value).toMatch(/^[0-9a-f-]{36}$/);
    expect(uuid!.value).not.toBe(tplUuid!.value);
    expect(secret!.value).not.toBe(tplSecret!.value);
    expect(readFileSync(path.join(root, database, 'ab', 'abcdef'), 'utf8')).toBe('attachment');
  });
});

describe('the stand-in, as real Odoo 18', () => {
  const asAdmin = (database: string) => client(database, 'admin', cfg.ERP_ADMIN_PASSWORD);

  it('has the group ids of a real database: fixed ids [2, 4] make an administrator, not an accountant', async () => {
    const { database } = await tenantWithDatabase();
    const root = asAdmin(database);
    const uid = await root.executeKw<number>('res.users', 'create', [
      { name: 'Fixed ids', login: 'fixed@x.test', password: 'fixed-ids-password', groups_id: [[6, 0, [2, 4]]] },
    ]);
    expect(uid).toBeGreaterThan(2);
    const wrong = client(database, 'fixed@x.test', 'fixed-ids-password');
    // Access Rights + Settings: may create contacts' users... but no accounting at all
    expect((await fault(wrong.executeKw('account.move', 'search', [[]]))).code).toBe(4);
    expect(await wrong.executeKw('res.users', 'write', [[uid], { active: true }])).toBe(true);
  });

  it('shows a user no accounting of a company it is not linked to', async () => {
    const { database } = await tenantWithDatabase();
    const root = asAdmin(database);
    const groups = await root.executeKw<{ res_id: number }[]>(
      'ir.model.data',
      'search_read',
      [
        [
          ['module', '=', 'account'],
          ['name', '=', 'group_account_readonly'],
        ],
      ],
      { fields: ['res_id'] },
    );
    await root.executeKw('res.users', 'create', [
      {
        name: 'No company',
        login: 'nocompany@x.test',
        password: 'no-company-password',
        company_ids: [[6, 0, [1]]],
        groups_id: [[6, 0, [groups[0]!.res_id]]],
      },
    ]);
    await queryTenantDb(
      cfg,
      database,
      `DELETE FROM res_company_users_rel WHERE user_id = (SELECT id FROM res_users WHERE login = 'nocompany@x.test')`,
    );
    const nobody = client(database, 'nocompany@x.test', 'no-company-password');
    expect(await nobody.executeKw('account.move', 'search_count', [[]])).toBe(0);
    expect(await nobody.executeKw('res.company', 'search', [[]])).toEqual([]);
  });

  it('answers a missing required field with the ValidationError fault Odoo gives (2)', async () => {
    const { database } = await tenantWithDatabase();
    const err = await fault(asAdmin(database).executeKw('res.users', 'create', [{ name: 'No login' }]));
    expect(err.code).toBe(2);
    expect(err.faultString).toContain('a mandatory field is not set');
    expect(err.faultString).toContain('Field: Login (login)');
  });

  it("writes a user's name on its partner, as res.users inherits res.partner", async () => {
    const { database } = await tenantWithDatabase();
    const root = asAdmin(database);
    const uid = await root.executeKw<number>('res.users', 'create', [{ name: 'Before', login: 'named@x.test' }]);
    await root.executeKw('res.users', 'write', [[uid], { name: 'After' }]);
    expect(await root.executeKw('res.users', 'read', [[uid]], { fields: ['name'] })).toEqual([
      { id: uid, name: 'After' },
    ]);
  });

  it('refuses a main company that is not among the allowed ones', async () => {
    const { database } = await tenantWithDatabase();
    const err = await fault(
      asAdmin(database).executeKw('res.users', 'create', [
        { name: 'Odd', login: 'odd@x.test', company_id: 1, company_ids: [[6, 0, []]] },
      ]),
    );
    expect(err.code).toBe(2);
    expect(err.faultString).toContain('is not in the allowed companies');
  });
});
