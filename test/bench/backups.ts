/**
 * `npm run bench:backups`: how long a backup and a restore of the demo tenant take, and how big
 * they are. Starts its own PostgreSQL and SeaweedFS in a throw-away folder, builds the starter/18
 * ERP template (the stand-in's demo data), clones the demo tenant's database from it as
 * provisioning does, fills its filestore with BENCH_FILES (default 200) files of BENCH_FILE_KB (50)
 * KiB, then times, through the same domain functions the workflows' activities run:
 *
 *   1. the backup: pg_dump (in an exported snapshot, with the record counts) + filestore archive,
 *      both stored in the object store with their SHA-256 and recorded;
 *   2. the restore: both objects fetched and checked, pg_restore into a new database, the
 *      filestore unpacked;
 *   3. the drill: a restore into a scratch tenant, measured, compared and torn down.
 *
 * With ODOO_SRC set (a folder holding Odoo 18's odoo-bin) the same again on real Odoo: the starter
 * template built by Odoo itself (`odoo-bin -i`, Odoo's demo data), the demo tenant cloned from it
 * with its Odoo filestore plus the same files. Prints the figures and the load average; asserts nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { parseConfig, type Config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { backupObjectStore, type ObjectStore } from '../../lib/object-store.js';
import { cloneTenantDatabase, tenantHostname } from '../../domain/erp/tenant-database.js';
import { backupTenant } from '../../domain/tenants/backups.js';
import { drillLatestBackup } from '../../domain/tenants/backup-drills.js';
import { findBackup } from '../../domain/tenants/backup-catalog.js';
import { erpFilestorePath } from '../../domain/tenants/filestore.js';
import { restoreBackupInto } from '../../domain/tenants/restores.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { ensureOdooTemplate, odooRuntimeOf } from '../../scripts/odoo-templates.js';
import {
  findPgBin,
  freePort,
  startPostgres,
  startThrowAwayObjectStore,
  stopAll,
  throwAwayDir,
} from '../../scripts/local-servers.js';

const FILES = Number(process.env.BENCH_FILES ?? 200);
const FILE_KB = Number(process.env.BENCH_FILE_KB ?? 50);
const ODOO_SRC = process.env.ODOO_SRC;
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
};

type Deps = { pool: pg.Pool; cfg: Config; store: ObjectStore; erpAdmin: pg.Pool };

/** BENCH_FILES random files of BENCH_FILE_KB KiB in `folder`, spread over 256 sub-folders as Odoo's are. */
function fillFilestore(folder: string): void {
  for (let i = 0; i < FILES; i++) {
    const sub = path.join(folder, (i % 256).toString(16).padStart(2, '0'));
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `attachment-${i}`), randomBytes(FILE_KB * 1024));
  }
}

/** Backup, restore as a new tenant and drill of `tenant` (its database cloned already); the figures as lines. */
async function backupRestoreDrill(deps: Deps, tenant: string, database: string): Promise<string[]> {
  step(`${tenant}: backup`);
  const [backup, backupMs] = await timed(() =>
    backupTenant(deps, {
      tenant,
      tier: 'starter',
      database,
      filestoreDir: erpFilestorePath(deps.cfg, tenant, database),
      stamp: new Date().toISOString(),
    }),
  );
  const stored = (await findBackup(deps.pool, tenant, backup.backupId))!;
  step(`${tenant}: restore as a new tenant`);
  const copy = `${tenant}-r1`;
  const [, restoreMs] = await timed(() =>
    restoreBackupInto(deps, { name: copy, database: tenantHostname(copy, deps.cfg.TENANT_DOMAIN), backup: stored }),
  );
  step(`${tenant}: drill`);
  const drill = await drillLatestBackup(deps, tenant);
  return [
    `database dump         ${mb(stored.database.sizeBytes)}`,
    `filestore archive     ${mb(stored.filestore.sizeBytes)}`,
    `backup                ${secs(backupMs)}   (pg_dump + tar.gz + upload with SHA-256 + record)`,
    `restore               ${secs(restoreMs)}   (download + SHA-256 check + pg_restore + unpack)`,
    `drill                 ${secs(drill.durationMs)}   (restore into a scratch tenant + compare + tear down): ${drill.outcome}${drill.error ? ` (${drill.error})` : ''}`,
    `load average          ${loadavg()}`,
  ];
}

/** The demo tenant on the stand-in: the starter/18 template of its demo data. */
async function benchStandIn(deps: Deps): Promise<string[]> {
  step('building the stand-in starter/18 template and the demo tenant (database + filestore)');
  await ensureErpTemplates(deps.cfg.ERP_DATABASE_URL, { tiers: ['starter'], versions: ['18'] });
  const database = tenantHostname('demo', deps.cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(deps.erpAdmin, { database, template: 'erp_tpl_starter_18' });
  fillFilestore(erpFilestorePath(deps.cfg, 'demo', database));
  return backupRestoreDrill(deps, 'demo', database);
}

/** The demo tenant on real Odoo 18: the starter template built by `odoo-bin -i` (in its own PostgreSQL database names). */
async function benchRealOdoo(deps: Deps, src: string): Promise<string[]> {
  const cfg = deps.cfg;
  step('building the starter template with real Odoo 18 (odoo-bin -i)');
  const rt = odooRuntimeOf(src, cfg.ODOO_DATA_DIR);
  const built = await ensureOdooTemplate(rt, {
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    tier: 'starter',
    adminPassword: cfg.ERP_ADMIN_PASSWORD,
  });
  const tenant = 'demo-odoo';
  const database = tenantHostname(tenant, cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(deps.erpAdmin, {
    database,
    template: built.template,
    filestoreRoot: path.join(cfg.ODOO_DATA_DIR, 'filestore'),
  });
  fillFilestore(erpFilestorePath(cfg, tenant, database));
  return [`template built by Odoo ${secs(built.ms)}`, ...(await backupRestoreDrill(deps, tenant, database))];
}

const dir = throwAwayDir('plana-bench-backups-');
try {
  step('starting PostgreSQL and SeaweedFS');
  const [pg, store] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    startThrowAwayObjectStore(dir),
  ]);
  const settings = {
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    FILESTORE_ROOT: path.join(dir, 'filestore'),
    BACKUP_ROOT: path.join(dir, 'backups'),
    PG_BIN: findPgBin(),
    ...store.env,
  };
  const cfg = parseConfig(settings);
  const pool = createPool(cfg.DATABASE_URL, 4);
  const erpAdmin = createPool(cfg.ERP_DATABASE_URL, 2);
  const objects = backupObjectStore(cfg);
  try {
    await migrate(pool);
    const standIn = await benchStandIn({ pool, cfg, store: objects, erpAdmin });
    const odooCfg = ODOO_SRC
      ? parseConfig({
          ...settings,
          ERP_BACKEND: 'odoo',
          ODOO_SRC,
          ODOO_DATA_DIR: path.join(dir, 'odoo'),
          ERP_ADMIN_PASSWORD: 'bench-odoo-admin-password',
        })
      : null;
    const odoo = odooCfg ? await benchRealOdoo({ pool, cfg: odooCfg, store: objects, erpAdmin }, ODOO_SRC!) : null;
    const indent = (lines: string[]) => lines.map((l) => `  ${l}`).join('\n');
    console.log(`
Backups of the demo tenant (starter; ${FILES} filestore files of ${FILE_KB} KiB added)
stand-in ERP (starter/18 template of its demo data):
${indent(standIn)}
real Odoo 18 (starter template built by odoo-bin -i with Odoo's demo data):
${odoo ? indent(odoo) : '  (not run: set ODOO_SRC to a folder holding Odoo 18 odoo-bin)'}
`);
  } finally {
    objects.close();
    await erpAdmin.end();
    await pool.end();
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
