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
import { templateDatabaseName } from '../domain/erp/tenant-database.js';
import { erpVersions, tiers, type ErpVersion, type Tier } from '../domain/tenants/types.js';
import { erpInstallModules } from '../domain/erp/odoo-bin.js';
import {
  installStandInDatabase,
  STAND_IN_LAYOUT as LAYOUT,
  standInTemplateMark,
  type StandInTemplateInfo as TemplateInfo,
} from '../sandbox/erp/install.js';

const LOCK_KEY = 'plana-erp-templates';

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
  // the stand-in's `odoo-bin -i`, as a from-scratch tenant install runs it. The template's admin has
  // ERP_ADMIN_PASSWORD: the platform signs in with it once per new tenant database to create the API
  // user, and replaces it there (domain/erp/api-user.ts).
  await installStandInDatabase(erpDatabaseUrl, {
    database: building,
    tier: opts.tier,
    version: opts.version,
    modules: erpInstallModules(opts.tier),
    today: opts.today,
    adminPassword: opts.adminPassword ?? config().ERP_ADMIN_PASSWORD,
  });

  // swap it in: the old template (if any) goes, the new one takes its name and becomes a template
  await admin.query(`ALTER DATABASE ${id(name)} IS_TEMPLATE false`).catch((err: { code?: string }) => {
    if (err.code !== '3D000') throw err;
  });
  await admin.query(`DROP DATABASE IF EXISTS ${id(name)} WITH (FORCE)`);
  await admin.query(`ALTER DATABASE ${id(building)} RENAME TO ${id(name)}`);
  await admin.query(`ALTER DATABASE ${id(name)} WITH IS_TEMPLATE true`);
  await admin.query(`COMMENT ON DATABASE ${id(name)} IS ${pg.escapeLiteral(standInTemplateMark(opts.today))}`);
  return name;
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
