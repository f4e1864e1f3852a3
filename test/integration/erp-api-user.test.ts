/** The tenant's dedicated ERP API user (§5.5) on a real tenant database and the platform table. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import { ensureErpApiUser, loadErpCredentials } from '../../domain/erp/api-user.js';
import { cloneTenantDatabase, dropTenantDatabase, templateDatabaseName, tenantHostname } from '../../domain/erp/tenant-database.js';
import { verifyOdooPassword } from '../../domain/erp/odoo-password.js';
import { createWorkspaceWithTenant, erpTestConfig, queryTenantDb } from '../support/erp-tenant.js';

let cfg: Config;
let pool: Pool;
let admin: Pool;
const deps = () => ({ platform: pool, erpDatabaseUrl: cfg.ERP_DATABASE_URL, secretsKey: cfg.SECRETS_KEY });

async function tenantWithDatabase() {
  const tenant = await createWorkspaceWithTenant(pool, { tier: 'starter', version: '18' });
  const database = tenantHostname(tenant, cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(admin, { database, template: templateDatabaseName('starter', '18') });
  return { tenant, database };
}

const apiUsers = (database: string, login: string) =>
  queryTenantDb<{ id: number; password: string; active: boolean; groups: number[] }>(
    cfg,
    database,
    `SELECT u.id, u.password, u.active, ARRAY(SELECT gid FROM res_groups_users_rel r WHERE r.uid = u.id ORDER BY gid) AS groups FROM res_users u WHERE login = $1`,
    [login],
  );

beforeAll(async () => {
  cfg = await erpTestConfig();
  pool = createPool(cfg.DATABASE_URL, 4);
  admin = createPool(cfg.ERP_DATABASE_URL, 2);
});
afterAll(async () => {
  await pool?.end();
  await admin?.end();
});

describe('ensureErpApiUser', () => {
  it('creates one API user with a long random password, read-only accounting rights and no admin rights', async () => {
    const { tenant, database } = await tenantWithDatabase();
    const result = await ensureErpApiUser(deps(), { tenant, database });
    expect(result).toEqual({ login: `api@${database}`, created: true });

    const credentials = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!;
    expect(credentials.login).toBe(result.login);
    expect(credentials.password.length).toBeGreaterThanOrEqual(40);

    const users = await apiUsers(database, result.login);
    expect(users).toHaveLength(1);
    expect(users[0]!.active).toBe(true);
    expect(users[0]!.groups).toEqual([2, 4]); // Internal User, Accounting / Read-only
    expect(await verifyOdooPassword(credentials.password, users[0]!.password)).toBe(true);
  });

  it('never stores the password in plaintext, in the platform or in the ERP', async () => {
    const { tenant, database } = await tenantWithDatabase();
    const { login } = await ensureErpApiUser(deps(), { tenant, database });
    const { password } = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant))!;
    const stored = await pool.query<{ password_encrypted: string }>('SELECT password_encrypted FROM tenant_erp_credentials WHERE tenant = $1', [tenant]);
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
    const results = await Promise.all([ensureErpApiUser(deps(), { tenant, database }), ensureErpApiUser(deps(), { tenant, database })]);
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
    await expect(ensureErpApiUser(deps(), { tenant, database })).rejects.toThrow(`tenant database ${database} does not exist`);
    expect(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant)).toBeNull();
  });

  it('has no credentials for a tenant without an API user', async () => {
    const tenant = await createWorkspaceWithTenant(pool, { tier: 'pro', version: '17' });
    expect(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant)).toBeNull();
  });
});
