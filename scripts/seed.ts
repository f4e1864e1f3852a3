/**
 * Demo data for `npm run dev`: workspace `demo`, its tenant `demo`, and the admin
 * admin@demo.test. Idempotent: running it again changes nothing but what it was told to.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { createPool, withTransaction } from '../lib/db.js';
import type { Config } from '../lib/config.js';
import { ensureErpApiUser } from '../domain/erp/api-user.js';
import { cloneTenantDatabase, databaseUrl, templateDatabaseName, tenantHostname } from '../domain/erp/tenant-database.js';
import { odooSchemaUpgradeSql } from '../sandbox/erp/models.js';
import { ensureTierModules } from '../domain/erp/tier-modules.js';
import { currentIngestionKey } from '../domain/webhooks/ingestion.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { ensureErpTemplates } from './erp-templates.js';

export const DEMO = {
  workspace: 'demo',
  tenant: 'demo',
  adminEmail: 'admin@demo.test',
  adminName: 'Demo Admin',
  projectId: 1,
} as const;

export interface SeedResult {
  /** Set when the password was (re)set in this run, so it can be printed once. */
  adminPassword?: string;
}

export async function seedDemo(pool: pg.Pool, opts: { adminPassword?: string } = {}): Promise<SeedResult> {
  return withTransaction(pool, async (db) => {
    const ws = await db.query<{ id: string }>(
      `INSERT INTO workspaces (slug, name) VALUES ($1, 'Demo Company')
       ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id`,
      [DEMO.workspace],
    );
    const workspaceId = ws.rows[0]!.id;
    await db.query(
      `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name)
       VALUES ($1, $2, $3, 'pro', '18', $4, $5) ON CONFLICT (name) DO NOTHING`,
      [DEMO.tenant, workspaceId, DEMO.projectId, DEMO.adminEmail, DEMO.adminName],
    );
    const existing = await db.query<{ id: string; password_hash: string | null }>(
      'SELECT id, password_hash FROM users WHERE email = $1',
      [DEMO.adminEmail],
    );
    let password: string | undefined;
    let userId = existing.rows[0]?.id;
    if (!userId || opts.adminPassword || !existing.rows[0]?.password_hash) {
      password = opts.adminPassword ?? randomBytes(12).toString('base64url');
      const hash = await bcrypt.hash(password, 10);
      const user = await db.query<{ id: string }>(
        `INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3)
         ON CONFLICT (email) DO UPDATE SET password_hash = EXCLUDED.password_hash RETURNING id`,
        [DEMO.adminEmail, DEMO.adminName, hash],
      );
      userId = user.rows[0]!.id;
    }
    await db.query(
      `INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')
       ON CONFLICT (user_id, workspace_id) DO NOTHING`,
      [userId, workspaceId],
    );
    return { adminPassword: password };
  });
}

/**
 * Gives the demo tenant a real ERP: the template databases, its own database cloned from
 * `erp_tpl_pro_18`, its route (namespace plana-odoo-18) and its API user. Idempotent.
 */
export async function seedDemoErp(
  pool: pg.Pool,
  cfg: Pick<Config, 'ERP_DATABASE_URL' | 'TENANT_DOMAIN' | 'SECRETS_KEY' | 'ERP_URL' | 'ERP_ADMIN_PASSWORD'> & Partial<Pick<Config, 'ERP_BACKEND' | 'ODOO_DATA_DIR' | 'EVENTS_URL'>>,
): Promise<{ host: string; database: string }> {
  // real Odoo: the template Odoo built (npm run odoo:templates, starter by default); else the stand-in's
  const odoo = cfg.ERP_BACKEND === 'odoo';
  if (!odoo) await ensureErpTemplates(cfg.ERP_DATABASE_URL);
  const template = templateDatabaseName(odoo ? 'starter' : 'pro', '18');
  const host = tenantHostname(DEMO.tenant, cfg.TENANT_DOMAIN);
  const admin = createPool(cfg.ERP_DATABASE_URL, 1);
  try {
    const filestoreRoot = odoo && cfg.ODOO_DATA_DIR ? path.join(cfg.ODOO_DATA_DIR, 'filestore') : undefined;
    await cloneTenantDatabase(admin, { database: host, template, filestoreRoot }).catch((err: Error) => {
      throw odoo ? new Error(`${err.message}: build it with ODOO_SRC=<odoo 18 folder> npm run odoo:templates`) : err;
    });
  } finally {
    await admin.end();
  }
  // a demo database cloned by an earlier version of this repository: bring it up to date (the stand-in's;
  // a real Odoo has the column from its account module)
  if (!odoo) {
    const demoDb = createPool(databaseUrl(cfg.ERP_DATABASE_URL, host), 1);
    try {
      await demoDb.query(odooSchemaUpgradeSql('18'));
    } finally {
      await demoDb.end();
    }
  }
  await pool.query(
    `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, 'plana-odoo-18', $1) ON CONFLICT DO NOTHING`,
    [host, DEMO.tenant],
  );
  // through the ERP (it must be running at ERP_URL), as the tenant's admin
  const deps = { platform: pool, erpUrl: cfg.ERP_URL, secretsKey: cfg.SECRETS_KEY, erpAdminPassword: cfg.ERP_ADMIN_PASSWORD };
  await ensureErpApiUser(deps, { tenant: DEMO.tenant, database: host });
  // the tier's modules and the automation rules that post invoice, payment and stock changes to the
  // event ingestion, as the reconcile step ensure-tier-modules makes them
  if (cfg.EVENTS_URL) {
    await ensureTierModules(deps, {
      database: host,
      tier: odoo ? 'starter' : 'pro',
      // tokens of the erp → event-ingestion pair's current key (the bootstrap made it)
      eventRules: { tenant: DEMO.tenant, eventsUrl: cfg.EVENTS_URL, ingestionKey: (await currentIngestionKey(new PgSecretStore(pool, cfg.SECRETS_KEY, 0))).key },
    });
  }
  return { host, database: host };
}
