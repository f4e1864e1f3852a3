/**
 * `npm run bench:erp`: figures for the ERP side, on private throw-away PostgreSQL and Redis
 * servers: time to build all template databases, time to clone a tenant database, and the latency
 * of a dashboard call (KPIs over XML-RPC through the stand-in) cold, uncached and cached.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { ensureErpApiUser, erpApiUserDeps } from '../../domain/erp/api-user.js';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import {
  cloneTenantDatabase,
  dropTenantDatabase,
  templateDatabaseName,
  tenantHostname,
} from '../../domain/erp/tenant-database.js';
import { startErpStandIn } from '../../sandbox/erp/server.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { freePort, startPostgres, startRedis, stopAll, throwAwayDir } from '../../scripts/local-servers.js';

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const fmt = (values: number[]) =>
  `p50 ${pct(values, 50).toFixed(1)} ms, p99 ${pct(values, 99).toFixed(1)} ms (n=${values.length})`;

const dir = throwAwayDir('plana-bench-erp-');
try {
  const [pg, redisServer] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    freePort().then((port) => startRedis({ dir: path.join(dir, 'redis'), port })),
  ]);
  const cfg = parseConfig({
    ...process.env,
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    REDIS_URL: redisServer.url,
    LOG_LEVEL: 'silent',
  });
  const pool = createPool(cfg.DATABASE_URL, 4);
  await migrate(pool);

  let t = process.hrtime.bigint();
  const built = await ensureErpTemplates(cfg.ERP_DATABASE_URL);
  console.log(`templates: ${built.length} built in ${ms(t).toFixed(0)} ms`);
  t = process.hrtime.bigint();
  await ensureErpTemplates(cfg.ERP_DATABASE_URL);
  console.log(`templates: check when present ${ms(t).toFixed(1)} ms`);

  const admin = createPool(cfg.ERP_DATABASE_URL, 2);
  const clones: number[] = [];
  for (let i = 0; i < 10; i++) {
    const database = `bench-${i}.${cfg.TENANT_DOMAIN}`;
    t = process.hrtime.bigint();
    await cloneTenantDatabase(admin, { database, template: templateDatabaseName('pro', '18') });
    clones.push(ms(t));
    if (i > 0) await dropTenantDatabase(admin, database);
  }
  console.log(`clone a tenant database from erp_tpl_pro_18: ${fmt(clones)}`);

  // one tenant behind the stand-in
  const ws = await pool.query<{ id: string }>(
    `INSERT INTO workspaces (slug, name) VALUES ('bench', 'Bench') RETURNING id`,
  );
  await pool.query(
    `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name) VALUES ('bench', $1, 1, 'pro', '18', 'o@bench.test', 'O')`,
    [ws.rows[0]!.id],
  );
  const host = tenantHostname('bench', cfg.TENANT_DOMAIN);
  await dropTenantDatabase(admin, `bench-0.${cfg.TENANT_DOMAIN}`);
  await cloneTenantDatabase(admin, { database: host, template: templateDatabaseName('pro', '18') });
  await pool.query(
    `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, 'bench', 'plana-odoo-18', $1)`,
    [host],
  );
  const erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    logger: createLogger({ level: 'silent' }),
  });
  await ensureErpApiUser(erpApiUserDeps(cfg, pool, erp.url), { tenant: 'bench', database: host });
  const dashboards = () => createDashboardService({ pool, config: { ...cfg, ERP_URL: erp.url } });
  const service = dashboards();

  t = process.hrtime.bigint();
  await service.kpis('bench');
  console.log(`dashboard kpis, cold (first call: login, new connections): ${ms(t).toFixed(1)} ms`);
  const uncached: number[] = [];
  for (let i = 0; i < 30; i++) {
    t = process.hrtime.bigint();
    await dashboards().kpis('bench'); // a new service: its cache is empty
    uncached.push(ms(t));
  }
  console.log(`dashboard kpis, not cached (8 XML-RPC calls): ${fmt(uncached)}`);
  const warm: number[] = [];
  for (let i = 0; i < 300; i++) {
    t = process.hrtime.bigint();
    await service.kpis('bench');
    warm.push(ms(t));
  }
  console.log(`dashboard kpis, cached: ${fmt(warm)}`);

  await erp.close();
  await admin.end();
  await pool.end();
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
