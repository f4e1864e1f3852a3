/**
 * The stand-in's `odoo-bin -i <modules>`: initialises a database with the stand-in's Odoo-shaped
 * tables (models.ts) and the tier's modules with their demo data (demo-data.ts), relative to the day
 * it runs. The template build (scripts/erp-templates.ts) and the from-scratch install of a tenant
 * database (domain/erp/from-scratch.ts) run these same steps. `paceMs` makes each module take that
 * long, as loading a module takes seconds on real Odoo (tests watch an install in progress with it).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import type { InstallProgress } from '../../domain/erp/from-scratch.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { tierModuleNames } from '../../domain/billing/tiers.js';
import type { ErpVersion, Tier } from '../../domain/tenants/types.js';
import { odooSchemaSql } from './models.js';
import { demoData, type Row } from './demo-data.js';

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

export interface StandInInstall {
  /** The new database (it must not exist). */
  database: string;
  tier: Tier;
  version: ErpVersion;
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
    const modules = tierModuleNames(opts.tier);
    for (const [index, module] of modules.entries()) {
      opts.signal?.throwIfAborted();
      opts.onProgress?.({ module, index: index + 1, total: modules.length });
      if (opts.paceMs) await sleep(opts.paceMs, undefined, { signal: opts.signal });
    }
    const tables = demoData({
      tier: opts.tier,
      version: opts.version,
      today: opts.today,
      adminPasswordHash: hashOdooPassword(opts.adminPassword),
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
