/** Template databases and tenant database clones on the real PostgreSQL. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../lib/db.js';
import {
  TemplateMissingError,
  cloneTenantDatabase,
  dropTenantDatabase,
  InvalidDatabaseNameError,
  templateDatabaseName,
  tenantDatabaseExists,
} from '../../domain/erp/tenant-database.js';
import { erpVersions, tiers } from '../../domain/tenants/types.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import type { Config } from '../../lib/config.js';
import { erpTestConfig, queryTenantDb, uniqueName } from '../support/erp-tenant.js';

let cfg: Config;
let admin: Pool;

beforeAll(async () => {
  cfg = await erpTestConfig();
  admin = createPool(cfg.ERP_DATABASE_URL, 4);
});
afterAll(async () => {
  await admin?.end();
});

const counts = (cfg: Config, db: string) =>
  queryTenantDb<{ partners: number; moves: number; lines: number; statement_lines: number; modules: number }>(
    cfg,
    db,
    `SELECT (SELECT count(*)::int FROM res_partner) AS partners, (SELECT count(*)::int FROM account_move) AS moves,
            (SELECT count(*)::int FROM account_move_line) AS lines, (SELECT count(*)::int FROM account_bank_statement_line) AS statement_lines,
            (SELECT count(*)::int FROM ir_module_module) AS modules`,
  ).then((r) => r[0]!);

describe('ERP template databases', () => {
  it('exist for every tier and ERP version, marked as templates', async () => {
    const res = await admin.query<{ datname: string; datistemplate: boolean }>(
      `SELECT datname, datistemplate FROM pg_database WHERE datname LIKE 'erp\\_tpl\\_%' ORDER BY 1`,
    );
    const expected = tiers.flatMap((t) => erpVersions.map((v) => templateDatabaseName(t, v))).sort();
    expect(res.rows.map((r) => r.datname)).toEqual(expected);
    expect(res.rows.every((r) => r.datistemplate)).toBe(true);
  });

  it('is idempotent: present and current templates are left alone', async () => {
    expect(await ensureErpTemplates(cfg.ERP_DATABASE_URL)).toEqual([]);
  });

  it.each(tiers)('hold realistic demo accounting for tier %s, more for bigger tiers', async (tier) => {
    const c = await counts(cfg, templateDatabaseName(tier, '18'));
    expect(c.partners).toBeGreaterThan(20);
    expect(c.moves).toBeGreaterThan(100);
    expect(c.lines).toBeGreaterThan(c.moves);
    expect(c.statement_lines).toBeGreaterThan(20);
    const [balance] = await queryTenantDb<{ debit: string; credit: string }>(
      cfg,
      templateDatabaseName(tier, '18'),
      'SELECT sum(debit) AS debit, sum(credit) AS credit FROM account_move_line',
    );
    expect(balance!.debit).toBe(balance!.credit); // double-entry: every entry balances
    const states = await queryTenantDb<{ state: string; payment_state: string }>(
      cfg,
      templateDatabaseName(tier, '18'),
      `SELECT DISTINCT state, payment_state FROM account_move WHERE move_type = 'out_invoice'`,
    );
    expect(states.map((s) => `${s.state}/${s.payment_state}`)).toEqual(
      expect.arrayContaining(['posted/paid', 'posted/not_paid', 'draft/not_paid']),
    );
  });

  it('differ by tier in their module list', async () => {
    const modules = async (tier: (typeof tiers)[number]) =>
      (
        await queryTenantDb<{ name: string }>(
          cfg,
          templateDatabaseName(tier, '17'),
          `SELECT name FROM ir_module_module WHERE state = 'installed'`,
        )
      ).map((m) => m.name);
    const [starter, enterprise] = await Promise.all([modules('starter'), modules('enterprise')]);
    expect(starter).toContain('account');
    expect(starter).not.toContain('mrp');
    expect(enterprise).toEqual(expect.arrayContaining(['account', 'mrp', 'project']));
    // the others are listed, not installed, as Odoo lists its addons path: a tier change installs them
    const listed = await queryTenantDb<{ name: string; state: string }>(
      cfg,
      templateDatabaseName('starter', '17'),
      `SELECT name, state FROM ir_module_module WHERE name = 'mrp'`,
    );
    expect(listed).toEqual([{ name: 'mrp', state: 'uninstalled' }]);
  });
});

describe('cloneTenantDatabase', () => {
  it('creates the tenant database with the template data, then reports it exists', async () => {
    const database = `${uniqueName()}.erp.plana.test`;
    const template = templateDatabaseName('starter', '19');
    expect(await cloneTenantDatabase(admin, { database, template })).toBe('created');
    expect(await tenantDatabaseExists(admin, database)).toBe(true);
    expect(await counts(cfg, database)).toEqual(await counts(cfg, template));
    expect(await cloneTenantDatabase(admin, { database, template })).toBe('exists');
    expect(await dropTenantDatabase(admin, database)).toBe('dropped');
    expect(await dropTenantDatabase(admin, database)).toBe('absent');
    expect(await tenantDatabaseExists(admin, database)).toBe(false);
  });

  it('is safe under concurrency: one caller creates, the others find it', async () => {
    const database = `${uniqueName()}.erp.plana.test`;
    const template = templateDatabaseName('pro', '17');
    const results = await Promise.all([1, 2, 3].map(() => cloneTenantDatabase(admin, { database, template })));
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(results.filter((r) => r === 'exists')).toHaveLength(2);
    await dropTenantDatabase(admin, database);
  });

  it('raises TemplateMissingError naming a missing template, and creates nothing', async () => {
    const database = `${uniqueName()}.erp.plana.test`;
    const err = await cloneTenantDatabase(admin, { database, template: 'erp_tpl_gold_18' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemplateMissingError);
    expect((err as TemplateMissingError).template).toBe('erp_tpl_gold_18');
    expect((err as Error).message).toContain('erp_tpl_gold_18');
    expect(await tenantDatabaseExists(admin, database)).toBe(false);
  });

  it('drops a database that has open connections', async () => {
    const database = `${uniqueName()}.erp.plana.test`;
    await cloneTenantDatabase(admin, { database, template: templateDatabaseName('starter', '18') });
    const { default: pg } = await import('pg');
    const { databaseUrl } = await import('../../domain/erp/tenant-database.js');
    const holder = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
    holder.on('error', () => {});
    await holder.connect();
    expect(await dropTenantDatabase(admin, database)).toBe('dropped');
    expect(await tenantDatabaseExists(admin, database)).toBe(false);
    await holder.end().catch(() => {});
  });

  it('refuses names that are not database-safe', async () => {
    await expect(
      cloneTenantDatabase(admin, {
        database: 'x"; DROP DATABASE plana; --',
        template: templateDatabaseName('pro', '18'),
      }),
    ).rejects.toThrow(InvalidDatabaseNameError);
    await expect(
      cloneTenantDatabase(admin, { database: '-bad.erp.test', template: templateDatabaseName('pro', '18') }),
    ).rejects.toThrow(/invalid database name/);
  });

  it('drops a name that can never be a database as absent (a half-made tenant deprovisions to nothing)', async () => {
    expect(await dropTenantDatabase(admin, '-bad.erp.test')).toBe('absent');
    expect(await dropTenantDatabase(admin, 'x"; DROP DATABASE plana; --')).toBe('absent');
  });
});
