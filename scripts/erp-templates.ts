/**
 * `npm run erp:templates`: the template databases `erp_tpl_<tier>_<version>` (starter, pro,
 * enterprise × ERP 17, 18, 19) that tenant databases are cloned from. Each holds Odoo-shaped
 * tables (sandbox/erp/models.ts) with deterministic demo accounting relative to the day it was
 * built (sandbox/erp/demo-data.ts). Idempotent and fast when they exist; a template built in an
 * earlier month is rebuilt so that "this month" figures stay meaningful. Each template is built
 * under a temporary name and renamed when complete, so a half-built template is never cloned.
 */
import { config } from '../lib/config.js';
import pg from 'pg';
import { createPool } from '../lib/db.js';
import { databaseUrl, templateDatabaseName } from '../domain/erp/tenant-database.js';
import { erpVersions, tiers, type ErpVersion, type Tier } from '../domain/tenants/types.js';
import { hashOdooPassword } from '../domain/erp/odoo-password.js';
import { odooSchemaSql } from '../sandbox/erp/models.js';
import { demoData, type Row } from '../sandbox/erp/demo-data.js';

/** Bump when the schema or the demo data changes: templates of an older layout are rebuilt. */
const LAYOUT = 9; // 7: res_groups.api_key_duration, res_users_apikeys; 8: ir.model(.fields), base.automation, ir.actions.server, stock.move; 9: auth.oauth.provider, res_users.oauth_*
const LOCK_KEY = 'plana-erp-templates';

interface TemplateInfo {
  plana: 'erp-template';
  layout: number;
  builtOn: string;
}

export async function ensureErpTemplates(
  erpDatabaseUrl: string,
  opts: { tiers?: readonly Tier[]; versions?: readonly ErpVersion[]; today?: string; adminPassword?: string } = {},
): Promise<string[]> {
  const today = opts.today ?? new Date().toISOString().slice(0, 10);
  const wanted = (opts.tiers ?? tiers).flatMap((tier) =>
    (opts.versions ?? erpVersions).map((version) => ({ tier, version })),
  );
  const admin = createPool(erpDatabaseUrl, 4);
  const lock = await admin.connect();
  try {
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [LOCK_KEY]);
    const current = await admin.query<{ datname: string; datistemplate: boolean; info: string | null }>(
      `SELECT datname, datistemplate, shobj_description(oid, 'pg_database') AS info FROM pg_database WHERE datname LIKE 'erp\\_tpl\\_%'`,
    );
    const upToDate = new Set(
      current.rows
        .filter((r) => {
          const info = parseInfo(r.info);
          return r.datistemplate && info?.layout === LAYOUT && info.builtOn.slice(0, 7) === today.slice(0, 7);
        })
        .map((r) => r.datname),
    );
    const todo = wanted.filter(({ tier, version }) => !upToDate.has(templateDatabaseName(tier, version)));
    const built: string[] = [];
    // a few at once: CREATE DATABASE and the inserts are short, the server has cores to spare
    for (let i = 0; i < todo.length; i += 3) {
      await Promise.all(
        todo.slice(i, i + 3).map(async ({ tier, version }) => {
          built.push(
            await buildTemplate(admin, erpDatabaseUrl, { tier, version, today, adminPassword: opts.adminPassword }),
          );
        }),
      );
    }
    return built.sort();
  } finally {
    await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [LOCK_KEY]).catch(() => {});
    lock.release();
    await admin.end();
  }
}

function parseInfo(comment: string | null): TemplateInfo | undefined {
  try {
    const info = JSON.parse(comment ?? '') as TemplateInfo;
    return info.plana === 'erp-template' ? info : undefined;
  } catch {
    return undefined;
  }
}

async function buildTemplate(
  admin: pg.Pool,
  erpDatabaseUrl: string,
  opts: { tier: Tier; version: ErpVersion; today: string; adminPassword?: string },
): Promise<string> {
  const name = templateDatabaseName(opts.tier, opts.version);
  const building = `${name}__building`;
  const id = pg.escapeIdentifier;
  await admin.query(`DROP DATABASE IF EXISTS ${id(building)} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${id(building)} TEMPLATE template0 ENCODING 'UTF8'`);

  const db = new pg.Client({ connectionString: databaseUrl(erpDatabaseUrl, building) });
  await db.connect();
  try {
    await db.query('BEGIN');
    await db.query(odooSchemaSql(opts.version));
    // The template's admin has ERP_ADMIN_PASSWORD: the platform signs in with it once per new tenant
    // database to create the API user, and replaces it there (domain/erp/api-user.ts).
    const adminPasswordHash = hashOdooPassword(opts.adminPassword ?? config().ERP_ADMIN_PASSWORD);
    const tables = demoData({ tier: opts.tier, version: opts.version, today: opts.today, adminPasswordHash });
    for (const [table, rows] of Object.entries(tables)) await insertRows(db, table, rows);
    for (const table of Object.keys(tables)) {
      if (table.endsWith('_rel')) continue;
      await db.query(
        `SELECT setval(pg_get_serial_sequence($1, 'id'), GREATEST((SELECT max(id) FROM ${id(table)}), 1))`,
        [table],
      );
    }
    await db.query('COMMIT');
  } finally {
    await db.end();
  }

  // swap it in: the old template (if any) goes, the new one takes its name and becomes a template
  await admin.query(`ALTER DATABASE ${id(name)} IS_TEMPLATE false`).catch((err: { code?: string }) => {
    if (err.code !== '3D000') throw err;
  });
  await admin.query(`DROP DATABASE IF EXISTS ${id(name)} WITH (FORCE)`);
  await admin.query(`ALTER DATABASE ${id(building)} RENAME TO ${id(name)}`);
  await admin.query(`ALTER DATABASE ${id(name)} WITH IS_TEMPLATE true`);
  const info: TemplateInfo = { plana: 'erp-template', layout: LAYOUT, builtOn: opts.today };
  await admin.query(`COMMENT ON DATABASE ${id(name)} IS ${pg.escapeLiteral(JSON.stringify(info))}`);
  return name;
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const built = await ensureErpTemplates(config().ERP_DATABASE_URL);
  console.log(
    built.length
      ? `Built ${built.length} ERP template database(s) in ${Date.now() - started} ms: ${built.join(', ')}`
      : 'All ERP template databases are present and current.',
  );
}
