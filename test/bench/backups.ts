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
 * Prints the figures; asserts nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { backupObjectStore } from '../../lib/object-store.js';
import { cloneTenantDatabase, tenantHostname } from '../../domain/erp/tenant-database.js';
import { backupTenant } from '../../domain/tenants/backups.js';
import { drillLatestBackup } from '../../domain/tenants/backup-drills.js';
import { findBackup } from '../../domain/tenants/backup-catalog.js';
import { restoreBackupInto } from '../../domain/tenants/restores.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
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
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
};

const dir = throwAwayDir('plana-bench-backups-');
try {
  step('starting PostgreSQL and SeaweedFS');
  const [pg, store] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    startThrowAwayObjectStore(dir),
  ]);
  const cfg = parseConfig({
    NODE_ENV: 'production',
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    FILESTORE_ROOT: path.join(dir, 'filestore'),
    BACKUP_ROOT: path.join(dir, 'backups'),
    PG_BIN: findPgBin(),
    ...store.env,
  });
  const pool = createPool(cfg.DATABASE_URL, 4);
  const erpAdmin = createPool(cfg.ERP_DATABASE_URL, 2);
  const objects = backupObjectStore(cfg);
  try {
    await migrate(pool);
    step('building the starter/18 template and the demo tenant (database + filestore)');
    await ensureErpTemplates(cfg.ERP_DATABASE_URL, { tiers: ['starter'], versions: ['18'] });
    const database = tenantHostname('demo', cfg.TENANT_DOMAIN);
    await cloneTenantDatabase(erpAdmin, { database, template: 'erp_tpl_starter_18' });
    const folder = path.join(cfg.FILESTORE_ROOT, 'demo');
    for (let i = 0; i < FILES; i++) {
      const sub = path.join(folder, (i % 256).toString(16).padStart(2, '0'));
      mkdirSync(sub, { recursive: true });
      writeFileSync(path.join(sub, `attachment-${i}`), randomBytes(FILE_KB * 1024));
    }
    const deps = { pool, cfg, store: objects, erpAdmin };

    step('backup');
    const [backup, backupMs] = await timed(() =>
      backupTenant(deps, {
        tenant: 'demo',
        tier: 'starter',
        database,
        filestoreDir: folder,
        stamp: new Date().toISOString(),
      }),
    );
    const stored = (await findBackup(pool, 'demo', backup.backupId))!;
    step('restore as a new tenant');
    const [, restoreMs] = await timed(() =>
      restoreBackupInto(deps, {
        name: 'demo-r1',
        database: tenantHostname('demo-r1', cfg.TENANT_DOMAIN),
        backup: stored,
      }),
    );
    step('drill');
    const drill = await drillLatestBackup(deps, 'demo');

    console.log(`
Backups of the demo tenant (stand-in ERP, starter/18 template; ${FILES} filestore files of ${FILE_KB} KiB)
  database dump         ${mb(stored.database.sizeBytes)}
  filestore archive     ${mb(stored.filestore.sizeBytes)}
  backup                ${secs(backupMs)}   (pg_dump + tar.gz + upload with SHA-256 + record)
  restore               ${secs(restoreMs)}   (download + SHA-256 check + pg_restore + unpack)
  drill                 ${secs(drill.durationMs)}   (restore into a scratch tenant + compare + tear down): ${drill.outcome}
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
