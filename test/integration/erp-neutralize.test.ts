/**
 * Neutralising an ERP database as `odoo-bin neutralize` does (domain/erp/neutralize.ts): each
 * installed module's `data/neutralize.sql`, found along the addons path, runs in one transaction.
 * On a stand-in tenant database (cloned from its starter template, the stand-in's own module
 * scripts) and on a database whose modules and scripts the test makes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { erpAddonsPath, neutralizeErpDatabase } from '../../domain/erp/neutralize.js';
import { STAND_IN_ADDONS_PATH } from '../../sandbox/erp/install.js';
import { cloneTenantDatabase, databaseUrl, dropTenantDatabase } from '../../domain/erp/tenant-database.js';
import { tempDir } from '../support/env.js';
import { erpTestConfig, queryTenantDb, uniqueName } from '../support/erp-tenant.js';

let cfg: Config;
let admin: Pool;
const made: string[] = [];

beforeAll(async () => {
  cfg = await erpTestConfig();
  admin = createPool(cfg.ERP_DATABASE_URL, 2);
});
afterAll(async () => {
  for (const database of made) await dropTenantDatabase(admin, database);
  await admin?.end();
});

async function neutralize(database: string, addonsPath: string[]): Promise<string[]> {
  const db = new pg.Client({ connectionString: databaseUrl(cfg.ERP_DATABASE_URL, database) });
  await db.connect();
  try {
    return await neutralizeErpDatabase(db, addonsPath);
  } finally {
    await db.end();
  }
}

/** An empty database with Odoo's module list and a table each of the test's modules neutralises. */
async function databaseWithModules(modules: Record<string, string>): Promise<string> {
  const database = uniqueName('neutral');
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  made.push(database);
  await queryTenantDb(
    cfg,
    database,
    `CREATE TABLE ir_module_module (id serial PRIMARY KEY, name varchar NOT NULL, state varchar NOT NULL);
     CREATE TABLE touched (module varchar NOT NULL);
     INSERT INTO ir_module_module (name, state) VALUES ${Object.entries(modules)
       .map(([name, state]) => `(${pg.escapeLiteral(name)}, ${pg.escapeLiteral(state)})`)
       .join(', ')}`,
  );
  return database;
}

/** `<dir>/<module>/data/neutralize.sql` with `sql`. */
function script(dir: string, module: string, sql: string): void {
  mkdirSync(path.join(dir, module, 'data'), { recursive: true });
  writeFileSync(path.join(dir, module, 'data', 'neutralize.sql'), sql);
}

const touched = async (database: string) =>
  (await queryTenantDb<{ module: string }>(cfg, database, 'SELECT module FROM touched ORDER BY module')).map(
    (r) => r.module,
  );

it("a stand-in tenant's copy: its base module's script flags the database and cuts the automation rules' webhooks", async () => {
  const database = uniqueName('neutral');
  await cloneTenantDatabase(admin, { database, template: 'erp_tpl_starter_18' });
  made.push(database);
  await queryTenantDb(
    cfg,
    database,
    `INSERT INTO ir_act_server (name, model_id, state, webhook_url)
     VALUES ('Post invoices', (SELECT min(id) FROM ir_model), 'webhook', 'https://events.example.test/hook')`,
  );

  expect(await neutralize(database, erpAddonsPath(cfg))).toEqual(['base']);
  expect(
    await queryTenantDb(
      cfg,
      database,
      `SELECT (SELECT array_agg(webhook_url) FROM ir_act_server WHERE state = 'webhook') AS webhooks,
              (SELECT array_agg(value) FROM ir_config_parameter WHERE key = 'database.is_neutralized') AS flag`,
    ),
  ).toEqual([{ webhooks: ['neutralization - disable webhook'], flag: ['true'] }]);
  // run again (a retried activity): still one flag
  await neutralize(database, erpAddonsPath(cfg));
  expect(
    await queryTenantDb(cfg, database, `SELECT value FROM ir_config_parameter WHERE key = 'database.is_neutralized'`),
  ).toEqual([{ value: 'true' }]);
});

it("runs the script of every module Odoo's neutralize counts installed, from the first folder of the addons path that has it", async () => {
  const [first, second] = [tempDir('addons'), tempDir('addons')];
  script(first, 'mail', `INSERT INTO touched VALUES ('mail from the first folder')`);
  script(second, 'mail', `INSERT INTO touched VALUES ('mail from the second folder')`);
  script(second, 'crm', `INSERT INTO touched VALUES ('crm')`);
  script(second, 'stock', `INSERT INTO touched VALUES ('stock'); INSERT INTO touched VALUES ('stock again')`);
  script(second, 'sale', `INSERT INTO touched VALUES ('sale')`);
  script(second, 'website', `INSERT INTO touched VALUES ('website')`);
  const database = await databaseWithModules({
    base: 'installed', // no script anywhere: nothing to run
    mail: 'installed',
    crm: 'to upgrade',
    stock: 'to remove',
    sale: 'uninstalled',
    website: 'to install',
  });

  expect(await neutralize(database, [first, second])).toEqual(['mail', 'crm', 'stock']);
  expect(await touched(database)).toEqual(['crm', 'mail from the first folder', 'stock', 'stock again']);
});

it('a script that fails leaves the database as it was and names its module', async () => {
  const dir = tempDir('addons');
  script(dir, 'mail', `INSERT INTO touched VALUES ('mail')`);
  script(dir, 'crm', `UPDATE no_such_table SET active = false`);
  const database = await databaseWithModules({ mail: 'installed', crm: 'installed' });

  await expect(neutralize(database, [dir])).rejects.toThrow(/neutralize\.sql of module crm failed: .*no_such_table/);
  expect(await touched(database)).toEqual([]);
});

it('on real Odoo the scripts are those of ODOO_SRC unless ERP_ADDONS_PATH says where, and one of them is needed', () => {
  expect(erpAddonsPath({ ERP_BACKEND: 'odoo', ODOO_SRC: '/opt/odoo' })).toEqual([
    '/opt/odoo/addons',
    '/opt/odoo/odoo/addons',
  ]);
  expect(
    erpAddonsPath({ ERP_BACKEND: 'odoo', ODOO_SRC: '/opt/odoo', ERP_ADDONS_PATH: '/srv/addons, /srv/oca' }),
  ).toEqual(['/srv/addons', '/srv/oca']);
  expect(() => erpAddonsPath({ ERP_BACKEND: 'odoo', ODOO_SRC: undefined })).toThrow(
    /needs ODOO_SRC or ERP_ADDONS_PATH/,
  );
});

it("the platform has no addons path of its own: the stand-in's is what its composition root configures", () => {
  expect(() => erpAddonsPath({ ERP_BACKEND: 'standin', ODOO_SRC: undefined })).toThrow(/needs ERP_ADDONS_PATH/);
  expect(erpAddonsPath(cfg)).toEqual([STAND_IN_ADDONS_PATH]);
});
