/**
 * The stand-in's `odoo-bin -i <modules>`: initialises a database with the stand-in's Odoo-shaped
 * tables (models.ts) and the given modules with their demo data (demo-data.ts), relative to the day
 * it runs. The template build (scripts/erp-templates.ts) and the from-scratch install of a tenant
 * database (the worker's installer, as the composition roots in scripts/ and test/ wire it) run
 * these same steps. `paceMs` makes each module take that long, as loading a module takes seconds on
 * real Odoo (tests watch an install in progress with it).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { demoData, type Row, type Tier } from './demo-data.js';
import { odooSchemaSql } from './models.js';
import type { ErpVersion } from './odoo-series.js';
import { hashPassword } from './passwords.js';
import { databaseUrl } from './tenant-databases.js';

/** The stand-in's addons path (Odoo's `--addons-path`): its modules' sources, their data/neutralize.sql. */
export const STAND_IN_ADDONS_PATH = fileURLToPath(new URL('./addons/', import.meta.url));

/** Bump when the schema or the demo data changes: templates of an older layout are rebuilt. */
export const STAND_IN_LAYOUT = 10; // 7: res_groups.api_key_duration, res_users_apikeys; 8: ir.model(.fields), base.automation, ir.actions.server, stock.move; 9: auth.oauth.provider, res_users.oauth_*; 10: auth_oidc listed and installed

/** What the comment of a stand-in template says (scripts/erp-templates.ts reads it back). */
export interface StandInTemplateInfo {
  plana: 'erp-template';
  layout: number;
  builtOn: string;
}

export const standInTemplateMark = (builtOn: string) =>
  JSON.stringify({ plana: 'erp-template', layout: STAND_IN_LAYOUT, builtOn } satisfies StandInTemplateInfo);

/** How far an install is, as Odoo's module loading logs it: the module being loaded, its place in the count. */
export interface InstallProgress {
  module: string;
  index: number;
  total: number;
}

export interface StandInInstall {
  /** The new database (it must not exist). */
  database: string;
  /** The template flavour of the demo data (its company's size and name). */
  tier: Tier;
  version: ErpVersion;
  /** What `odoo-bin -i` is given: the modules to install, in order. */
  modules: readonly string[];
  /** The day the demo data is relative to (YYYY-MM-DD). */
  today: string;
  /** The admin's password (Odoo's hash of it is stored). */
  adminPassword: string;
  paceMs?: number;
  onProgress?: (progress: InstallProgress) => void;
  signal?: AbortSignal;
}

/** CREATE DATABASE from template0, then the schema and every module's data in one transaction. */
export async function installStandInDatabase(erpDatabaseUrl: string, opts: StandInInstall): Promise<void> {
  const admin = new pg.Client({ connectionString: erpDatabaseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(opts.database)} TEMPLATE template0 ENCODING 'UTF8'`);
  } finally {
    await admin.end();
  }
  const db = new pg.Client({ connectionString: databaseUrl(erpDatabaseUrl, opts.database) });
  await db.connect();
  try {
    await db.query('BEGIN');
    await db.query(odooSchemaSql(opts.version));
    const modules = opts.modules;
    for (const [index, module] of modules.entries()) {
      opts.signal?.throwIfAborted();
      opts.onProgress?.({ module, index: index + 1, total: modules.length });
      if (opts.paceMs) await sleep(opts.paceMs, undefined, { signal: opts.signal });
    }
    const tables = demoData({
      tier: opts.tier,
      version: opts.version,
      modules: opts.modules,
      today: opts.today,
      adminPasswordHash: hashPassword(opts.adminPassword),
    });
    for (const [table, rows] of Object.entries(tables)) await insertRows(db, table, rows);
    for (const table of Object.keys(tables)) {
      if (table.endsWith('_rel')) continue;
      await db.query(
        `SELECT setval(pg_get_serial_sequence($1, 'id'), GREATEST((SELECT max(id) FROM ${pg.escapeIdentifier(table)}), 1))`,
        [table],
      );
    }
    await db.query('COMMIT');
  } finally {
    await db.end();
  }
}

/** Multi-row INSERTs with parameters, in chunks that stay under PostgreSQL's parameter limit. */
async function insertRows(db: pg.Client, table: string, rows: Row[]): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const perChunk = Math.floor(60_000 / columns.length);
  for (let start = 0; start < rows.length; start += perChunk) {
    const chunk = rows.slice(start, start + perChunk);
    const params: unknown[] = [];
    const values = chunk.map((row) => `(${columns.map((c) => `$${params.push(row[c] ?? null)}`).join(', ')})`);
    await db.query(
      `INSERT INTO ${pg.escapeIdentifier(table)} (${columns.map((c) => pg.escapeIdentifier(c)).join(', ')}) VALUES ${values.join(', ')}`,
      params,
    );
  }
}
