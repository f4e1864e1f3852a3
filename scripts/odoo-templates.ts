/**
 * Real-Odoo mode (ERP_BACKEND=odoo): the template databases `erp_tpl_<tier>_18`, built by Odoo
 * itself: `odoo-bin -i <the tier's modules>` (Odoo's own demo data: repeatable accounting records
 * created through its ORM), then the admin password set to ERP_ADMIN_PASSWORD through Odoo's own
 * model (`odoo-bin shell`), then renamed into place with its filestore (`<data dir>/filestore/<db>`)
 * and marked IS_TEMPLATE. Odoo is never part of the project: ODOO_SRC is a folder holding
 * `odoo-bin` and the Python comes from `bash scripts/odoo-setup.sh` (a cached venv).
 *
 *   ODOO_SRC=/work/odoo-src ODOO_DATA_DIR=~/.local/share/plana/odoo npm run odoo:templates
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { templateDatabaseName } from '../domain/erp/tenant-database.js';
import { tiers, type Tier } from '../domain/tenants/types.js';
import { tierModuleNames } from '../domain/billing/tiers.js';

/** The modules of each tier: the platform's catalogue (domain/billing/tiers.ts), as the stand-in's templates. */
export const ODOO_TIER_MODULES: Record<Tier, string[]> = {
  starter: tierModuleNames('starter'),
  pro: tierModuleNames('pro'),
  enterprise: tierModuleNames('enterprise'),
};

/** The comment of a template built by Odoo (a stand-in template of the same name has another). */
export const ODOO_TEMPLATE_MARK = JSON.stringify({ plana: 'odoo-template', odoo: '18.0', layout: 3 }); // 3: base_automation (event rules)

/** Python run by `odoo-bin shell` on a new template (Odoo's ORM, committed at the end). */
const ODOO_TEMPLATE_SHELL = (adminPassword: string) => `
admin = env.ref('base.user_admin')
admin.password = ${JSON.stringify(adminPassword)}
eur = env.ref('base.EUR')
eur.active = True
europe = env['res.company'].create({'name': 'Plana Demo Europe', 'currency_id': eur.id})
admin.write({'company_ids': [(4, europe.id)]})
env['account.chart.template'].try_loading('generic_coa', company=europe, install_demo=False)
env.cr.commit()
`;

export interface OdooRuntime {
  /** Folder holding odoo-bin. */
  src: string;
  /** The venv's python (scripts/odoo-setup.sh). */
  python: string;
  /** Odoo's data dir: sessions and `filestore/<database>`. */
  dataDir: string;
}

/** The venv python for ODOO_SRC, installing the requirements once (cached outside the clone). */
export function odooPython(src: string): string {
  return execFileSync('bash', [path.resolve(import.meta.dirname, 'odoo-setup.sh')], {
    env: { ...process.env, ODOO_SRC: src },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .pop()!;
}

/** odoo-bin's database options for a PostgreSQL URL. */
export function odooDbArgs(databaseUrl: string): string[] {
  const url = new URL(databaseUrl);
  return [
    `--db_host=${url.hostname}`,
    `--db_port=${url.port || '5432'}`,
    `--db_user=${decodeURIComponent(url.username)}`,
    `--db_password=${decodeURIComponent(url.password)}`,
  ];
}

function run(rt: OdooRuntime, args: string[], input?: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(rt.python, [path.join(rt.src, 'odoo-bin'), ...args], {
      cwd: rt.src,
      stdio: ['pipe', 'ignore', 'pipe'],
      signal,
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4_000)));
    child.stdin.end(input ?? '');
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`odoo-bin ${args[0]} exited with ${code}: ${err}`)),
    );
  });
}

/** Whether `erp_tpl_<tier>_18` was built by Odoo (its comment says so; a stand-in template of the same name was not). */
async function odooTemplateIn(admin: pg.Client, template: string): Promise<boolean> {
  const found = await admin.query(
    `SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate AND shobj_description(oid, 'pg_database') = $2`,
    [template, ODOO_TEMPLATE_MARK],
  );
  return Boolean(found.rowCount);
}

/** The tiers whose template built by Odoo is on the PostgreSQL server of `erpDatabaseUrl`. */
export async function odooTemplateTiers(erpDatabaseUrl: string): Promise<Tier[]> {
  const admin = new pg.Client({ connectionString: erpDatabaseUrl });
  await admin.connect();
  try {
    const built: Tier[] = [];
    for (const tier of tiers) if (await odooTemplateIn(admin, templateDatabaseName(tier, '18'))) built.push(tier);
    return built;
  } finally {
    await admin.end();
  }
}

/**
 * Builds `erp_tpl_<tier>_18` on the PostgreSQL server of `erpDatabaseUrl` (its admin database) unless
 * it exists (a stand-in template of the same name is replaced). Returns the template's name and how
 * long the build took (0 when it existed). `signal` stops a build (odoo-bin is ended; the next build
 * starts over).
 */
export async function ensureOdooTemplate(
  rt: OdooRuntime,
  opts: { erpDatabaseUrl: string; tier: Tier; adminPassword: string; signal?: AbortSignal },
): Promise<{ template: string; ms: number }> {
  const template = templateDatabaseName(opts.tier, '18');
  const admin = new pg.Client({ connectionString: opts.erpDatabaseUrl });
  await admin.connect();
  try {
    if (await odooTemplateIn(admin, template)) return { template, ms: 0 };
    const started = Date.now();
    const building = `${template}__building`;
    const id = pg.escapeIdentifier;
    await admin.query(`DROP DATABASE IF EXISTS ${id(building)} WITH (FORCE)`);
    const filestore = (db: string) => path.join(rt.dataDir, 'filestore', db);
    rmSync(filestore(building), { recursive: true, force: true });
    mkdirSync(rt.dataDir, { recursive: true });
    const common = [
      '--addons-path=addons,odoo/addons',
      `--data-dir=${rt.dataDir}`,
      ...odooDbArgs(opts.erpDatabaseUrl),
      '-d',
      building,
      '--log-level=warn',
    ];
    await run(
      rt,
      [...common, '-i', ODOO_TIER_MODULES[opts.tier].join(','), '--stop-after-init'],
      undefined,
      opts.signal,
    );
    // through Odoo's own models: the admin's password (hashed by Odoo) and a second company in EUR
    // with the generic chart of accounts (the admin is linked to it, so the API user will be too)
    await run(rt, ['shell', ...common, '--no-http'], ODOO_TEMPLATE_SHELL(opts.adminPassword), opts.signal);
    await admin.query(`ALTER DATABASE ${id(template)} IS_TEMPLATE false`).catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${id(template)} WITH (FORCE)`);
    await admin.query(`ALTER DATABASE ${id(building)} RENAME TO ${id(template)}`);
    await admin.query(`COMMENT ON DATABASE ${id(template)} IS ${pg.escapeLiteral(ODOO_TEMPLATE_MARK)}`);
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
  if (!src) throw new Error('set ODOO_SRC to a folder holding odoo-bin (a copy of Odoo 18.0 Community)');
  const rt = { src, python: odooPython(src), dataDir: cfg.ODOO_DATA_DIR };
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
