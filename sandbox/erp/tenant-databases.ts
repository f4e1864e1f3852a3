/**
 * Which tenant a Host is (the platform's routes, domain/tenants/host-route-cache.ts: host → database, namespace
 * `plana-odoo-<version>`, cached for a second) and a connection pool per tenant database.
 */
import pg from 'pg';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { unservedDatabaseReason } from '../../domain/erp/from-scratch.js';
import { erpVersionOfNamespace, type ErpVersion } from '../../domain/tenants/types.js';
import { HostRouteCache } from '../../domain/tenants/host-route-cache.js';
import { OdooError } from './odoo-errors.js';

export interface Route {
  host: string;
  tenant: string;
  database: string;
  version: ErpVersion;
}

export class TenantDatabases {
  private readonly pools = new Map<string, pg.Pool>();
  /** On the ERP server's admin database: whether a route's database is there. */
  private readonly admin: pg.Pool;

  private readonly routes: HostRouteCache;

  constructor(
    platform: pg.Pool,
    private readonly erpDatabaseUrl: string,
  ) {
    this.routes = new HostRouteCache(platform);
    this.admin = new pg.Pool({ connectionString: erpDatabaseUrl, max: 2, idleTimeoutMillis: 2_000 });
    // a connection cut while the pool ends (the server stopping) must not crash the process
    this.admin.on('error', () => {});
    this.admin.on('connect', (client) => client.on('error', () => {}));
  }

  /** Why no worker serves the route's database (being installed from scratch, missing), or undefined. */
  unservedReason(route: Route): Promise<string | undefined> {
    return unservedDatabaseReason(this.admin, route.database);
  }

  async routeFor(host: string): Promise<Route | null> {
    const row = await this.routes.routeOf(host);
    return row
      ? { host, tenant: row.tenant, database: row.database, version: erpVersionOfNamespace(row.namespace) }
      : null;
  }

  /** Runs `fn` on the tenant database; a missing database becomes Odoo's OperationalError. */
  async onTenantDb<T>(route: Route, fn: (db: pg.Pool) => Promise<T>): Promise<T> {
    try {
      return await fn(this.poolFor(route.database));
    } catch (err) {
      if ((err as { code?: string }).code === '3D000') {
        await this.forgetPool(route.database);
        throw new OdooError(
          1,
          `connection to server failed: FATAL:  database "${route.database}" does not exist`,
          'psycopg2.OperationalError',
        );
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.keys()].map((database) => this.forgetPool(database)));
    await this.admin.end();
  }

  private poolFor(database: string): pg.Pool {
    let pool = this.pools.get(database);
    if (!pool) {
      // short idle timeout: idle connections to a tenant database must not linger (drops, dumps)
      pool = new pg.Pool({
        connectionString: databaseUrl(this.erpDatabaseUrl, database),
        max: 4,
        idleTimeoutMillis: 2_000,
      });
      pool.on('error', () => {});
      this.pools.set(database, pool);
    }
    return pool;
  }

  private async forgetPool(database: string) {
    const pool = this.pools.get(database);
    this.pools.delete(database);
    await pool?.end().catch(() => {});
  }
}
