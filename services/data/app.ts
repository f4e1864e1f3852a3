/**
 * The internal data service (§5.4 "agents service → data service", port 8002): the workspace's ERP
 * figures for the agents' tools, computed by the same code as the Workspace API's dashboards
 * (domain/erp/dashboards.ts: XML-RPC to the tenant's ERP as its read-only API user, cached 30 s).
 *
 *   GET /data/workspaces/:workspaceId/kpis
 *   GET /data/workspaces/:workspaceId/cashflow?months=1..24
 *   GET /data/workspaces/:workspaceId/overdue-invoices
 *   GET /healthz, /readyz
 *
 * Two checks on every read: `X-API-Key` must be the agents service's key (the shared service-key
 * check), and `X-Workspace-Grant` must be a grant the account API signed for this very workspace
 * (domain/agents/workspace-grant.ts), so no caller (nor a confused agent) reads another workspace.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type pg from 'pg';
import { registerProbes } from '../../lib/http.js';
import { buildServiceApp } from '../../lib/service-app.js';
import { AppError } from '../../lib/errors.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { registerKeyedRoutes } from '../service-routes.js';
import { AlertsSchema, CashflowSchema, KpisSchema, type DashboardService } from '../../domain/erp/dashboards.js';
import { WORKSPACE_GRANT_HEADER, type WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { serviceProblemResponses } from '../../domain/agents/schemas.js';
import type { DestinationStream } from 'pino';

export const DATA_TARGET = 'data';
/** The only caller of the data service (inventory: agents → data). */
export const DATA_CALLERS = ['agents'] as const;

export interface DataDeps {
  pool: pg.Pool;
  serviceKeys: ServiceKeyCheck;
  grants: WorkspaceGrants;
  dashboards: DashboardService;
  logLevel?: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

const errors = serviceProblemResponses;

export async function buildDataApp(deps: DataDeps): Promise<FastifyInstance> {
  const app = await buildServiceApp(deps.logLevel, { service: 'data', logStream: deps.logStream });

  registerProbes(app as unknown as FastifyInstance, { name: 'postgres', ping: () => deps.pool.query('SELECT 1') });

  /** The slug of the workspace the grant names, once the grant is checked against the path. */
  async function grantedWorkspace(req: FastifyRequest): Promise<string> {
    const { workspaceId } = req.params as { workspaceId: string };
    const header = req.headers[WORKSPACE_GRANT_HEADER];
    const granted = deps.grants.verify(typeof header === 'string' ? header : undefined);
    if (!granted)
      throw new AppError(
        'FORBIDDEN',
        'A valid workspace grant (X-Workspace-Grant, issued by the account API) is required.',
      );
    if (granted !== workspaceId) throw new AppError('FORBIDDEN', 'The workspace grant is for another workspace.');
    const { rows } = await deps.pool.query<{ slug: string }>('SELECT slug FROM workspaces WHERE id = $1', [granted]);
    if (!rows[0]) throw new AppError('NOT_FOUND', 'No such workspace.');
    return rows[0].slug;
  }

  await registerKeyedRoutes(app, deps.serviceKeys, { callers: DATA_CALLERS }, (data) => {
    const params = Type.Object({ workspaceId: Type.String({ format: 'uuid' }) });

    data.get(
      '/data/workspaces/:workspaceId/kpis',
      { schema: { params, response: { 200: KpisSchema, ...errors } } },
      async (req) => deps.dashboards.kpis(await grantedWorkspace(req)),
    );
    data.get(
      '/data/workspaces/:workspaceId/cashflow',
      {
        schema: {
          params,
          querystring: Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 })) }),
          response: { 200: CashflowSchema, ...errors },
        },
      },
      async (req) => deps.dashboards.cashflow(await grantedWorkspace(req), { months: req.query.months }),
    );
    data.get(
      '/data/workspaces/:workspaceId/overdue-invoices',
      { schema: { params, response: { 200: AlertsSchema, ...errors } } },
      async (req) => deps.dashboards.alerts(await grantedWorkspace(req)),
    );
  });
  return app;
}
