/** Test tenants with a real ERP database: workspace + tenant rows, a clone of a template, a route, an API user. */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import type { Config } from '../../lib/config.js';
import { ensureErpApiUser, erpApiUserDeps } from '../../domain/erp/api-user.js';
import { ensureTierModules, type TierModulesResult } from '../../domain/erp/tier-modules.js';
import {
  cloneTenantDatabase,
  databaseUrl,
  templateDatabaseName,
  tenantHostname,
} from '../../domain/erp/tenant-database.js';
import type { ErpVersion, Tier } from '../../domain/tenants/types.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { createLogger } from '../../lib/logger.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import { createPool } from '../../lib/db.js';
import { testConfig } from './env.js';

/** testConfig() plus the ERP settings of this run: the test PostgreSQL's admin database. */
export async function erpTestConfig(overrides: Record<string, string> = {}): Promise<Config> {
  return testConfig({ ERP_DATABASE_URL: databaseUrl(inject('databaseUrl'), 'postgres'), ...overrides });
}

export const uniqueName = (prefix = 'e') => `${prefix}-${randomUUID().slice(0, 8)}`;

export interface TestTenant {
  name: string;
  workspace: string;
  host: string;
  database: string;
  version: ErpVersion;
}

export async function createWorkspaceWithTenant(
  pool: pg.Pool,
  opts: { tier: Tier; version: ErpVersion; name?: string },
) {
  const name = opts.name ?? uniqueName();
  const ws = await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $2) RETURNING id', [
    name,
    `Workspace ${name}`,
  ]);
  await pool.query(
    `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name)
     VALUES ($1, $2, 7, $3, $4, $5, 'Owner')`,
    [name, ws.rows[0]!.id, opts.tier, opts.version, `owner@${name}.test`],
  );
  return name;
}

/** A fully provisioned ERP tenant (what the tenant lifecycle does, step by step). */
export async function provisionTestTenant(
  cfg: Config,
  pool: pg.Pool,
  admin: pg.Pool,
  opts: { tier: Tier; version: ErpVersion; erpUrl: string },
): Promise<TestTenant> {
  const name = await createWorkspaceWithTenant(pool, opts);
  const host = tenantHostname(name, cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(admin, { database: host, template: templateDatabaseName(opts.tier, opts.version) });
  await pool.query('INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, $3, $1)', [
    host,
    name,
    `plana-odoo-${opts.version}`,
  ]);
  await ensureErpApiUser(erpApiUserDeps(cfg, pool, opts.erpUrl), { tenant: name, database: host });
  return { name, workspace: name, host, database: host, version: opts.version };
}

/**
 * provisionTestTenant plus what the reconcile step ensure-tier-modules does next: the tier's modules
 * and the automation rules that post the tenant's changes to the event ingestion, with tokens of
 * `ingestionKey` (the erp → event-ingestion pair's current key).
 */
export async function provisionTenantWithEventRules(
  cfg: Config,
  pool: pg.Pool,
  admin: pg.Pool,
  opts: { tier: Tier; version: ErpVersion; erpUrl: string; ingestionKey: string },
): Promise<{ tenant: TestTenant; modules: TierModulesResult }> {
  const tenant = await provisionTestTenant(cfg, pool, admin, opts);
  const modules = await ensureTierModules(erpApiUserDeps(cfg, pool, opts.erpUrl), {
    database: tenant.database,
    tier: opts.tier,
    eventRules: { tenant: tenant.name, eventsUrl: cfg.EVENTS_URL, ingestionKey: opts.ingestionKey },
  });
  return { tenant, modules };
}

export function startTestErp(cfg: Config) {
  return startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    logger: createLogger({ level: 'silent' }),
  });
}

/** A query on a tenant database, for computing expected values independently of the ERP. */
export async function queryTenantDb<R extends pg.QueryResultRow>(
  cfg: Config,
  database: string,
  sql: string,
  params: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** The password `setAccountantPassword` gives a tenant's admin. */
const ACCOUNTANT_PASSWORD = 'accountant-pw';

/**
 * An accountant's changes in a tenant's ERP (the platform's own API user only reads): the tenant's
 * admin gets a password the test knows; log in with `accountantLogin`.
 */
export async function setAccountantPassword(cfg: Config, tenant: TestTenant): Promise<void> {
  await queryTenantDb(cfg, tenant.database, `UPDATE res_users SET password = $1 WHERE login = 'admin'`, [
    hashOdooPassword(ACCOUNTANT_PASSWORD),
  ]);
}

/** How an accountant (after `setAccountantPassword`) logs in to the tenant's ERP at `erpUrl`. */
export function accountantLogin(erpUrl: string, tenant: TestTenant) {
  return { baseUrl: erpUrl, host: tenant.host, db: tenant.database, login: 'admin', password: ACCOUNTANT_PASSWORD };
}

/** The ERP stand-in on the run's PostgreSQL, a platform pool and an ERP admin pool, with the config that reaches them. */
export interface ErpTestBed {
  /** erpTestConfig() with ERP_URL at the stand-in (and the settings asked for). */
  cfg: Config;
  pool: pg.Pool;
  /** On the ERP server's admin database (clones and drops tenant databases). */
  admin: pg.Pool;
  erp: ErpStandIn;
  /** provisionTestTenant on this bed. */
  provision(opts: { tier: Tier; version: ErpVersion }): Promise<TestTenant>;
  close(): Promise<void>;
}

export async function startErpTestBed(
  opts: { poolSize?: number; settings?: Record<string, string> } = {},
): Promise<ErpTestBed> {
  const base = await erpTestConfig();
  const pool = createPool(base.DATABASE_URL, opts.poolSize ?? 4);
  const admin = createPool(base.ERP_DATABASE_URL, 2);
  const erp = await startTestErp(base);
  const cfg = await erpTestConfig({ ERP_URL: erp.url, ...opts.settings });
  return {
    cfg,
    pool,
    admin,
    erp,
    provision: (tenant) => provisionTestTenant(cfg, pool, admin, { ...tenant, erpUrl: erp.url }),
    async close() {
      await erp.close();
      await pool.end();
      await admin.end();
    },
  };
}
