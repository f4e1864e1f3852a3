/**
 * Real-Odoo mode (ERP_BACKEND=odoo): the template databases `erp_tpl_<tier>_<version>`, built by Odoo
 * itself (the version ODOO_SRC is): `odoo-bin -i <the tier's modules>` (Odoo's own demo data: repeatable accounting records
 * created through its ORM), then the admin password set to ERP_ADMIN_PASSWORD through Odoo's own
 * model (`odoo-bin shell`), then renamed into place with its filestore (`<data dir>/filestore/<db>`)
 * and marked IS_TEMPLATE. Odoo is never part of the project: ODOO_SRC is a folder holding
 * `odoo-bin` (Odoo Community 17.0, 18.0 or 19.0) and the Python comes from
 * `bash scripts/odoo-setup.sh` (a cached venv per version).
 *
 *   ODOO_SRC=/work/odoo-src-18 ODOO_DATA_DIR=~/.local/share/plana/odoo npm run odoo:templates
 */
import { execFileSync } from 'node:child_process';
import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { templateDatabaseName } from '../domain/erp/tenant-database.js';
import { tiers, type ErpVersion, type Tier } from '../domain/tenants/types.js';
import { tierModuleNames } from '../domain/billing/tiers.js';
import {
  installOdooDatabase,
  odooAddonsPathArg,
  odooDbArgs,
  odooSourceVersion,
  odooTemplateMark,
  type OdooRuntime,
} from '../domain/erp/odoo-bin.js';

/** The modules of each tier: the platform's catalogue (domain/billing/tiers.ts), as the stand-in's templates. */
export const ODOO_TIER_MODULES: Record<Tier, string[]> = {
  starter: tierModuleNames('starter'),
  pro: tierModuleNames('pro'),
  enterprise: tierModuleNames('enterprise'),
};

export { odooAddonsPathArg, odooDbArgs, odooSourceVersion, odooTemplateMark, type OdooRuntime }; // (their home is domain/erp/odoo-bin.ts)

/** The venv python for an Odoo source (its version's venv), installing the requirements once (cached outside the clone). */
export function odooPython(src: string): string {
  return execFileSync('bash', [path.resolve(import.meta.dirname, 'odoo-setup.sh'), src], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .pop()!;
}

/** An Odoo runtime for a source folder: its version (odoo/release.py) and that version's venv. */
export function odooRuntimeOf(src: string, dataDir: string): OdooRuntime {
  return { src, version: odooSourceVersion(src), python: odooPython(src), dataDir };
}

/** Whether `erp_tpl_<tier>_<version>` was built by Odoo (its comment says so; a stand-in template of the same name was not). */
async function odooTemplateIn(admin: pg.Client, template: string, version: ErpVersion): Promise<boolean> {
  const found = await admin.query(
    `SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate AND shobj_description(oid, 'pg_database') = $2`,
    [template, odooTemplateMark(version)],
  );
  return Boolean(found.rowCount);
}

/** The tiers whose template built by Odoo of `version` is on the PostgreSQL server of `erpDatabaseUrl`. */
export async function odooTemplateTiers(erpDatabaseUrl: string, version: ErpVersion): Promise<Tier[]> {
  const admin = new pg.Client({ connectionString: erpDatabaseUrl });
  await admin.connect();
  try {
    const built: Tier[] = [];
    for (const tier of tiers)
      if (await odooTemplateIn(admin, templateDatabaseName(tier, version), version)) built.push(tier);
    return built;
  } finally {
    await admin.end();
  }
}

/**
 * Builds `erp_tpl_<tier>_<version>` (the runtime's version) on the PostgreSQL server of `erpDatabaseUrl` (its admin database) unless
 * it exists (a stand-in template of the same name is replaced). Returns the template's name and how
 * long the build took (0 when it existed). `signal` stops a build (odoo-bin is ended; the next build
 * starts over).
 */
export async function ensureOdooTemplate(
  rt: OdooRuntime,
  opts: { erpDatabaseUrl: string; tier: Tier; adminPassword: string; signal?: AbortSignal },
): Promise<{ template: string; ms: number }> {
  const template = templateDatabaseName(opts.tier, rt.version);
  const admin = new pg.Client({ connectionString: opts.erpDatabaseUrl });
  await admin.connect();
  try {
    if (await odooTemplateIn(admin, template, rt.version)) return { template, ms: 0 };
    const started = Date.now();
    const building = `${template}__building`;
    const id = pg.escapeIdentifier;
    await admin.query(`DROP DATABASE IF EXISTS ${id(building)} WITH (FORCE)`);
    const filestore = (db: string) => path.join(rt.dataDir, 'filestore', db);
    rmSync(filestore(building), { recursive: true, force: true });
    // Odoo's own install (domain/erp/odoo-bin.ts), as a from-scratch tenant install runs it
    await installOdooDatabase(rt, {
      erpDatabaseUrl: opts.erpDatabaseUrl,
      database: building,
      tier: opts.tier,
      adminPassword: opts.adminPassword,
      signal: opts.signal,
    });
    await admin.query(`ALTER DATABASE ${id(template)} IS_TEMPLATE false`).catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${id(template)} WITH (FORCE)`);
    await admin.query(`ALTER DATABASE ${id(building)} RENAME TO ${id(template)}`);
    await admin.query(`COMMENT ON DATABASE ${id(template)} IS ${pg.escapeLiteral(odooTemplateMark(rt.version))}`);
    await admin.query(`ALTER DATABASE ${id(template)} WITH IS_TEMPLATE true`);
    rmSync(filestore(template), { recursive: true, force: true });
    if (existsSync(filestore(building))) renameSync(filestore(building), filestore(template));
    return { template, ms: Date.now() - started };
  } finally {
    await admin.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { config } = await import('../lib/config.js');
  const cfg = config();
  const src = process.env.ODOO_SRC;
  if (!src) throw new Error('set ODOO_SRC to a folder holding odoo-bin (a copy of Odoo Community 17.0, 18.0 or 19.0)');
  const rt = odooRuntimeOf(src, cfg.ODOO_DATA_DIR);
  for (const tier of (process.env.TIERS ?? 'starter').split(',') as Tier[]) {
    const built = await ensureOdooTemplate(rt, {
      erpDatabaseUrl: cfg.ERP_DATABASE_URL,
      tier,
      adminPassword: cfg.ERP_ADMIN_PASSWORD,
    });
    console.log(
      built.ms ? `Built ${built.template} with Odoo in ${Math.round(built.ms / 1000)} s` : `${built.template} exists`,
    );
  }
}
