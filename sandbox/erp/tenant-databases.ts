/**
 * Which tenant a Host is and a connection pool per tenant database. The stand-in reads the
 * platform's routes as the tenant ingress does in front of real Odoo: a row of `tenant_routes`
 * (host → tenant, database, namespace `plana-odoo-<series>`), trusted for a second; the query is
 * the stand-in's own, so a change to that table shows here as a failing stand-in.
 */
import pg from 'pg';
import type { ErpVersion } from './odoo-series.js';
import { OdooError } from './odoo-errors.js';

/** How long a host's route (or its absence) is trusted before `tenant_routes` is read again. */
const ROUTE_TTL_MS = 1_000;

/** The URL of `database` on the server of `serverUrl`. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

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

  private readonly routes = new Map<string, { route: Route | null; at: number }>();

  constructor(
    private readonly platform: pg.Pool,
    private readonly erpDatabaseUrl: string,
  ) {
    this.admin = new pg.Pool({ connectionString: erpDatabaseUrl, max: 2, idleTimeoutMillis: 2_000 });
    // a connection cut while the pool ends (the server stopping) must not crash the process
    this.admin.on('error', () => {});
    this.admin.on('connect', (client) => client.on('error', () => {}));
  }

  /**
   * Why no ERP worker serves the route's database, or undefined: the platform installs a database
   * from scratch as `<database>__installing` and renames it when done, or the database is not there.
   */
  async unservedReason(route: Route): Promise<string | undefined> {
    const installing = `${route.database}__installing`;
    const { rows } = await this.admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname = ANY($1)',
      [[route.database, installing]],
    );
    const names = new Set(rows.map((r) => r.datname));
    if (names.has(route.database)) return undefined;
    if (names.has(installing)) return `database "${route.database}" is being installed from scratch`;
    return `database "${route.database}" does not exist`;
  }

  async routeFor(host: string): Promise<Route | null> {
    const cached = this.routes.get(host);
    if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route;
    const { rows } = await this.platform.query<{ tenant: string; namespace: string; database: string }>(
      'SELECT tenant, namespace, database FROM tenant_routes WHERE host = $1',
      [host],
    );
    const row = rows[0];
    const route = row
      ? {
          host,
          tenant: row.tenant,
          database: row.database,
          version: row.namespace.replace(/^plana-odoo-/, '') as ErpVersion,
        }
      : null;
    this.routes.set(host, { route, at: Date.now() });
    return route;
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
