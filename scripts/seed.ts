/**
 * Demo data for `npm run dev`: workspace `demo` and its admin admin@demo.test (seedDemo), then its
 * tenant `demo`, a TenantClient applied on the Kubernetes API as any other (applyDemoTenantClient).
 * Idempotent: running it again changes nothing but what it was told to.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { createPool, withTransaction } from '../lib/db.js';
import type { Config } from '../lib/config.js';
import { databaseUrl, tenantHostname } from '../domain/erp/tenant-database.js';
import { odooSchemaUpgradeSql } from '../sandbox/erp/models.js';
import type { TenantClient } from '../domain/tenants/tenant-client.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, type Tier } from '../domain/tenants/types.js';
import { kubeCredentials } from '../lib/kube-config.js';
import { TenantClientApi } from '../domain/tenants/tenant-client-api.js';
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

/** The demo tenant, a TenantClient like any other (`describe tenant demo` shows it). */
export function demoTenantClient(tier: Tier): TenantClient {
  return {
    apiVersion: TENANT_CLIENT_API_VERSION,
    kind: TENANT_CLIENT_KIND,
    metadata: { name: DEMO.tenant },
    spec: {
      subdomain: DEMO.tenant,
      projectId: DEMO.projectId,
      tier,
      erpVersion: '18',
      ownerEmail: DEMO.adminEmail,
      ownerName: DEMO.adminName,
    },
  };
}

/**
 * The demo TenantClient applied on the platform's Kubernetes API, as `kubectl apply` does (the
 * TenantClient controller provisions it), then waited on until its status says Ready for this
 * generation. Idempotent: on a restart the same spec is `unchanged`. `labels` go on the object
 * (a controller's label selector).
 */
export async function applyDemoTenantClient(
  kubeconfigPath: string,
  tier: Tier,
  timeoutMs = 120_000,
  labels?: Record<string, string>,
): Promise<{ result: string; phase: string; ready: string }> {
  const { kubeConfig, source } = kubeCredentials(kubeconfigPath);
  const api = new TenantClientApi(kubeConfig, source);
  const { result } = await api.apply({ metadata: { name: DEMO.tenant, labels }, spec: demoTenantClient(tier).spec });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const obj = await api.get(DEMO.tenant);
    const current = obj.status?.observedGeneration === obj.metadata.generation;
    const ready = current ? (obj.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown') : 'Unknown';
    if (ready === 'True' || Date.now() > deadline) return { result, phase: obj.status?.phase ?? 'Pending', ready };
    await sleep(500);
  }
}

/**
 * What the demo tenant's provisioning clones from: the stand-in's template databases (real Odoo's
 * are built by Odoo, scripts/odoo-templates.ts). A demo database cloned by an earlier version of
 * this repository is brought up to date.
 */
export async function prepareDemoErp(cfg: Pick<Config, 'ERP_DATABASE_URL' | 'TENANT_DOMAIN'>): Promise<void> {
  await ensureErpTemplates(cfg.ERP_DATABASE_URL);
  const host = tenantHostname(DEMO.tenant, cfg.TENANT_DOMAIN);
  const admin = createPool(cfg.ERP_DATABASE_URL, 1);
  try {
    if (!(await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [host])).rowCount) return;
  } finally {
    await admin.end();
  }
  const demoDb = createPool(databaseUrl(cfg.ERP_DATABASE_URL, host), 1);
  try {
    await demoDb.query(odooSchemaUpgradeSql('18'));
  } finally {
    await demoDb.end();
  }
}
