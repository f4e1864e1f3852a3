/**
 * Routes: tenant hostname → tenant ERP, in the namespace of its ERP version (§2.3). The lifecycle
 * workflow only sees this interface; the local driver keeps routes in the `tenant_routes` table
 * that the ERP stand-in honours (no route → 404). A Kubernetes driver would create an Ingress
 * (or HTTPRoute) named after the tenant in namespace `plana-odoo-<erpVersion>` instead.
 *
 * This file is the one place that reads or writes `tenant_routes`: the driver below, and the
 * look-ups of the ingress, the ERP stand-in, the health probe, the dashboards and the ERP jobs.
 */
import type pg from 'pg';
import type { ErpVersion, Tier } from './types.js';

export interface TenantRoute {
  host: string;
  tenant: string;
  namespace: string;
  database: string;
}

export interface RouteDriver {
  /** Creates the route, or makes an existing one point where asked. Idempotent. */
  createRoute(route: TenantRoute): Promise<'created' | 'updated' | 'unchanged'>;
  /** Removes the tenant's route; 'absent' when there was none. Idempotent. */
  removeRoute(tenant: string): Promise<'removed' | 'absent'>;
  getRoute(tenant: string): Promise<TenantRoute | null>;
}

/** The local driver: one row per tenant in `tenant_routes` (platform database). */
export function createTableRouteDriver(pool: pg.Pool): RouteDriver {
  return {
    async createRoute(route) {
      const { rows } = await pool.query<{ inserted: boolean; changed: boolean }>(
        `WITH before AS (SELECT host, namespace, database FROM tenant_routes WHERE tenant = $2)
         INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant) DO UPDATE SET host = EXCLUDED.host, namespace = EXCLUDED.namespace, database = EXCLUDED.database
         RETURNING (xmax = 0) AS inserted,
                   NOT EXISTS (SELECT 1 FROM before b WHERE b.host = $1 AND b.namespace = $3 AND b.database = $4) AS changed`,
        [route.host, route.tenant, route.namespace, route.database],
      );
      const row = rows[0]!;
      return row.inserted ? 'created' : row.changed ? 'updated' : 'unchanged';
    },
    async removeRoute(tenant) {
      const res = await pool.query('DELETE FROM tenant_routes WHERE tenant = $1', [tenant]);
      return res.rowCount ? 'removed' : 'absent';
    },
    getRoute: (tenant) => routeOfTenant(pool, tenant),
  };
}

/** The tenant's route, or null when it has none (not provisioned yet, or deprovisioned). */
export async function routeOfTenant(pool: pg.Pool, tenant: string): Promise<TenantRoute | null> {
  const { rows } = await pool.query<TenantRoute>(
    'SELECT host, tenant, namespace, database FROM tenant_routes WHERE tenant = $1',
    [tenant],
  );
  return rows[0] ?? null;
}

/** The route serving a hostname, or null when no tenant is there (the ERP entry points answer 404). */
export async function routeOfHost(pool: pg.Pool, host: string): Promise<TenantRoute | null> {
  const { rows } = await pool.query<TenantRoute>(
    'SELECT host, tenant, namespace, database FROM tenant_routes WHERE host = $1',
    [host],
  );
  return rows[0] ?? null;
}

/** A tenant (the platform's registry row) with its route, which is null until the tenant is provisioned. */
export interface TenantWithRoute {
  tenant: string;
  workspaceId: string | null;
  erpVersion: ErpVersion;
  route: TenantRoute | null;
}

const TENANT_WITH_ROUTE = `SELECT t.name AS tenant, t.workspace_id AS "workspaceId", t.erp_version AS "erpVersion", r.host, r.namespace, r.database
  FROM tenants t LEFT JOIN tenant_routes r ON r.tenant = t.name`;

type TenantWithRouteRow = Omit<TenantWithRoute, 'route'> & {
  host: string | null;
  namespace: string | null;
  database: string | null;
};

function tenantWithRouteOf(row: TenantWithRouteRow | undefined): TenantWithRoute | null {
  if (!row) return null;
  const { tenant, workspaceId, erpVersion, host, namespace, database } = row;
  const route = host !== null && namespace !== null && database !== null ? { host, tenant, namespace, database } : null;
  return { tenant, workspaceId, erpVersion, route };
}

/** The tenant of that name with its route, or null when there is no such tenant. */
export async function tenantWithRoute(pool: pg.Pool, tenant: string): Promise<TenantWithRoute | null> {
  const { rows } = await pool.query<TenantWithRouteRow>(`${TENANT_WITH_ROUTE} WHERE t.name = $1`, [tenant]);
  return tenantWithRouteOf(rows[0]);
}

/** The workspace's tenant (its first, by creation) with its route, or null when the workspace has no tenant. */
export async function workspaceTenantWithRoute(pool: pg.Pool, workspaceSlug: string): Promise<TenantWithRoute | null> {
  const { rows } = await pool.query<TenantWithRouteRow>(
    `${TENANT_WITH_ROUTE} JOIN workspaces w ON w.id = t.workspace_id WHERE w.slug = $1 ORDER BY t.created_at LIMIT 1`,
    [workspaceSlug],
  );
  return tenantWithRouteOf(rows[0]);
}

/** A tenant with a route (its ERP answers), with what the ERP jobs need to reach it. */
export interface RoutedTenant {
  tenant: string;
  host: string;
  database: string;
  /** The workspace's slug (events carry it). */
  workspace: string | null;
  erpVersion: string;
}

/**
 * Every tenant with a route, by name: the tenants whose ERPs the platform's ERP jobs visit (sweep,
 * rule rewrite). A backup restored as a staging copy (`tenant_restores`) or a drill's scratch
 * tenant (`tenant_drill_scratches`) is not among them: its ERP's events are not the customer's.
 * `only.tier`: those of one tier (the tier's backup drill).
 */
export async function routedTenants(pool: pg.Pool, only: { tier?: Tier } = {}): Promise<RoutedTenant[]> {
  const { rows } = await pool.query<RoutedTenant>(
    `SELECT r.tenant, r.host, r.database, w.slug AS workspace, t.erp_version AS "erpVersion"
       FROM tenant_routes r JOIN tenants t ON t.name = r.tenant LEFT JOIN workspaces w ON w.id = t.workspace_id
      WHERE NOT EXISTS (SELECT 1 FROM tenant_restores x WHERE x.name = r.tenant)
        AND NOT EXISTS (SELECT 1 FROM tenant_drill_scratches d WHERE d.name = r.tenant)
        AND ($1::text IS NULL OR t.tier = $1)
      ORDER BY r.tenant`,
    [only.tier ?? null],
  );
  return rows;
}
