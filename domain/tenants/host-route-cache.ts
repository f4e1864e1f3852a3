/**
 * The route of a Host as the tenant ingress reads it on every request (the ERP stand-in reads the
 * same table with its own query): `tenant_routes` (./http-routes.ts) read at most once a second per host; a host without a route is
 * remembered as such for as long.
 */
import type pg from 'pg';
import { routeOfHost, type TenantRoute } from './http-routes.js';

/** How long a host's route is trusted before `tenant_routes` is read again. */
export const HOST_ROUTE_TTL_MS = 1_000;

export class HostRouteCache {
  private readonly routes = new Map<string, { route: TenantRoute | null; at: number }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly ttlMs = HOST_ROUTE_TTL_MS,
  ) {}

  async routeOf(host: string): Promise<TenantRoute | null> {
    const cached = this.routes.get(host);
    if (cached && Date.now() - cached.at < this.ttlMs) return cached.route;
    const route = await routeOfHost(this.pool, host);
    this.routes.set(host, { route, at: Date.now() });
    return route;
  }
}
