/**
 * What the agents and auth benches build before they measure, on their throw-away PostgreSQL: the
 * platform schema, the pro/18 ERP template, the ERP stand-in, and the workspace `bench` with a tenant
 * database cloned from the template, its route and its ERP API user.
 */
import { ensureErpApiUser, erpApiUserDeps } from '../../domain/erp/api-user.js';
import { cloneTenantDatabase, templateDatabaseName, tenantHostname } from '../../domain/erp/tenant-database.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { startErpStandIn } from '../../sandbox/erp/server.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';

export const BENCH_SLUG = 'bench';

/** The migrated platform database, the ERP admin pool, the pro/18 template and the ERP stand-in. */
export async function startBenchErp(pg: { url: string; urlFor(database: string): string }) {
  const pool = createPool(pg.url, 4);
  const admin = createPool(pg.urlFor('postgres'), 2);
  await migrate(pool);
  await ensureErpTemplates(pg.urlFor('postgres'), { tiers: ['pro'], versions: ['18'] });
  const erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: pg.url,
    erpDatabaseUrl: pg.urlFor('postgres'),
    logger: createLogger({ level: 'silent' }),
  });
  return {
    pool,
    admin,
    erp,
    async close() {
      await erp.close();
      await pool.end();
      await admin.end();
    },
  };
}

/** The workspace `bench` and its pro/18 tenant: database, route and ERP API user (ERP at cfg.ERP_URL). */
export async function addBenchTenant(
  cfg: Config,
  pool: Pool,
  admin: Pool,
): Promise<{ workspaceId: string; host: string }> {
  const slug = BENCH_SLUG;
  const ws = await pool.query<{ id: string }>("INSERT INTO workspaces (slug, name) VALUES ($1, 'Bench') RETURNING id", [
    slug,
  ]);
  const workspaceId = ws.rows[0]!.id;
  await pool.query(
    `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name)
     VALUES ($1, $2, 1, 'pro', '18', 'owner@bench.test', 'Owner')`,
    [slug, workspaceId],
  );
  const host = tenantHostname(slug, cfg.TENANT_DOMAIN);
  await cloneTenantDatabase(admin, { database: host, template: templateDatabaseName('pro', '18') });
  await pool.query(
    "INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, 'plana-odoo-18', $1)",
    [host, slug],
  );
  await ensureErpApiUser(erpApiUserDeps(cfg, pool), { tenant: slug, database: host });
  return { workspaceId, host };
}
