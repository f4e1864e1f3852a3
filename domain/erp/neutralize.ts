/**
 * Neutralising a copy of a tenant's ERP database as `odoo-bin neutralize` does (odoo/modules/
 * neutralize.py; Odoo.sh does it for staging copies): every installed module's `data/neutralize.sql`,
 * looked up along the addons path, runs in one transaction, so a restored copy sends no e-mail, runs
 * no scheduled action, posts no webhook, charges through no payment provider, signs in through no
 * OAuth provider… whatever its modules say. On real Odoo the scripts are Odoo's own (ODOO_SRC's
 * `addons` and `odoo/addons`); the stand-in's are its modules' (sandbox/erp/addons).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';

/** The stand-in ERP's module sources: the neutralize scripts of the modules it has. */
const STAND_IN_ADDONS = fileURLToPath(new URL('../../sandbox/erp/addons/', import.meta.url));

/** Where modules are looked up, in order, as `--addons-path=addons,odoo/addons` has it for real Odoo. */
export function erpAddonsPath(cfg: Pick<Config, 'ERP_BACKEND' | 'ODOO_SRC'>): string[] {
  if (cfg.ERP_BACKEND !== 'odoo') return [STAND_IN_ADDONS];
  if (!cfg.ODOO_SRC)
    throw new Error("neutralising a copy on real Odoo needs ODOO_SRC: its modules' data/neutralize.sql are there");
  return [path.join(cfg.ODOO_SRC, 'addons'), path.join(cfg.ODOO_SRC, 'odoo', 'addons')];
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
