/**
 * Neutralising a copy of a tenant's ERP database as `odoo-bin neutralize` does (odoo/modules/
 * neutralize.py; Odoo.sh does it for staging copies): every installed module's `data/neutralize.sql`,
 * looked up along the addons path, runs in one transaction, so a restored copy sends no e-mail, runs
 * no scheduled action, posts no webhook, charges through no payment provider, signs in through no
 * OAuth provider… whatever its modules say. The scripts are the ERP's own: ERP_ADDONS_PATH's folders
 * (the ERP stand-in's are set there by the composition roots in scripts/ and test/), or on real Odoo
 * ODOO_SRC's `addons` and `odoo/addons`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';

/** Where modules are looked up, in order, as Odoo's `--addons-path` has it. */
export function erpAddonsPath(cfg: Pick<Config, 'ERP_BACKEND' | 'ODOO_SRC' | 'ERP_ADDONS_PATH'>): string[] {
  if (cfg.ERP_ADDONS_PATH)
    return cfg.ERP_ADDONS_PATH.split(',')
      .map((dir) => dir.trim())
      .filter(Boolean);
  if (cfg.ERP_BACKEND === 'odoo' && cfg.ODOO_SRC)
    return [path.join(cfg.ODOO_SRC, 'addons'), path.join(cfg.ODOO_SRC, 'odoo', 'addons')];
  throw new Error(
    cfg.ERP_BACKEND === 'odoo'
      ? "neutralising a copy on real Odoo needs ODOO_SRC or ERP_ADDONS_PATH: its modules' data/neutralize.sql are there"
      : "neutralising a copy needs ERP_ADDONS_PATH: the ERP's module folders, where their data/neutralize.sql are",
  );
}

/** The modules Odoo's neutralize treats as installed. */
async function installedModules(db: pg.ClientBase): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM ir_module_module WHERE state IN ('installed', 'to upgrade', 'to remove') ORDER BY id`,
  );
  return rows.map((r) => r.name);
}

/** `<module>/data/neutralize.sql` from the first folder of the addons path that has the module, or null. */
async function neutralizeScript(addonsPath: string[], module: string): Promise<string | null> {
  for (const dir of addonsPath) {
    const sql = await readFile(path.join(dir, module, 'data', 'neutralize.sql'), 'utf8').catch(() => null);
    if (sql !== null) return sql.trim();
  }
  return null;
}

/** Neutralises the database `db` is connected to, in one transaction; answers the modules whose script ran. */
export async function neutralizeErpDatabase(db: pg.ClientBase, addonsPath: string[]): Promise<string[]> {
  const scripts: { module: string; sql: string }[] = [];
  for (const module of await installedModules(db)) {
    const sql = await neutralizeScript(addonsPath, module);
    if (sql) scripts.push({ module, sql });
  }
  await db.query('BEGIN');
  try {
    for (const { module, sql } of scripts)
      await db.query(sql).catch((err: Error) => {
        throw new Error(`neutralize.sql of module ${module} failed: ${err.message}`);
      });
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK');
    throw err;
  }
  return scripts.map((s) => s.module);
}
