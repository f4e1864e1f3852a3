/** The tenant's HTTP route (host → tenant ERP in namespace plana-odoo-<erpVersion>), through the route driver. */
import type { TenantRoute } from '../domain/tenants/http-routes.js';
import type { PlatformDeps } from './deps.js';

export const createTenantRouteActivities = ({ routes }: PlatformDeps) => ({
  async createRoute(route: TenantRoute) {
    return { host: route.host, outcome: await routes.createRoute(route) };
  },
  async removeRoute(input: { tenant: string }) {
    return { outcome: await routes.removeRoute(input.tenant) };
  },
});
