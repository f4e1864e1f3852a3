/**
 * The dashboard endpoints of the Workspace API (specification §4.1, §5.3): KPIs, cash flow and
 * alerts of a workspace, computed from its tenant ERP over XML-RPC by the dashboard service.
 * Scope `dashboard:read`; key verification, limits, the workspace binding of `:slug` and the
 * execution log come from the workspace-auth plugin's route table.
 *
 * The browser portal (web/) reads the same figures as a logged-in member of the workspace:
 * `GET /api/portal/workspaces/:slug/dashboard/{kpis,cashflow,alerts}` (access.user, membership
 * checked here), served from the same cache.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  AlertsSchema,
  CashflowSchema,
  KpisSchema,
  answersOf,
  createDashboardService,
  type FigureName,
} from '../../../domain/erp/dashboards.js';
import { TenantName } from '../../schemas/common.js';
import { AppError } from '../../../lib/errors.js';
import { membershipsOf } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';

const keyErrors = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  429: Type.Ref('Problem'),
  502: Type.Ref('Problem'),
  503: Type.Ref('Problem'),
  504: Type.Ref('Problem'),
};
const sessionErrors = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  502: Type.Ref('Problem'),
  503: Type.Ref('Problem'),
  504: Type.Ref('Problem'),
};
const params = Type.Object({ slug: TenantName });
const JSON_TYPE = 'application/json; charset=utf-8';
const months = Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 })) });

/** The three figures: path, summary, answer schema and query (cash flow's `months`). */
const figures = [
  {
    figure: 'kpis',
    summary: 'KPIs: revenue this month, receivables (overdue), payables, cash balance',
    response: KpisSchema,
  },
  { figure: 'cashflow', summary: 'Cash in and out per month', response: CashflowSchema, querystring: months },
  { figure: 'alerts', summary: 'Alerts: overdue invoices, unreconciled bank lines', response: AlertsSchema },
] as const satisfies { figure: FigureName; summary: string; response: unknown; querystring?: unknown }[];

type FigureRequest = FastifyRequest<{ Params: { slug: string }; Querystring: { months?: number } }>;

export default async function dashboardRoutes(app: FastifyInstance) {
  const service = app.deps.dashboardService
    ? answersOf(app.deps.dashboardService)
    : createDashboardService({ pool: app.deps.pool, config: app.deps.config });
  /** The figure's JSON bytes, from the dashboards' cache (domain/erp/dashboards.ts). */
  const send = async (req: FigureRequest, reply: FastifyReply, figure: FigureName) => {
    const json = await service.json(req.params.slug, figure, { months: req.query?.months });
    return reply.type(JSON_TYPE).send(json);
  };
  const memberOf = async (userId: string, slug: string) => {
    const [row] = await membershipsOf(app.deps.pool, userId, slug);
    if (!row) throw new AppError('FORBIDDEN', `You are not a member of workspace "${slug}".`);
  };

  for (const { figure, summary, response, ...query } of figures) {
    // a workspace key with `dashboard:read`: access.key attaches the key check (plugins/workspace-auth.ts, attachKeyChecks)
    app.get(
      `/api/portal/odoo/:slug/${figure}`,
      {
        config: { access: access.key('dashboard:read') },
        schema: { tags: ['dashboards'], summary, params, ...query, response: { 200: response, ...keyErrors } },
      },
      (req: FigureRequest, reply) => send(req, reply, figure),
    );
  }
  for (const { figure, summary, response, ...query } of figures) {
    // the same figure for a logged-in member of the workspace (the browser portal)
    app.get(
      `/api/portal/workspaces/:slug/dashboard/${figure}`,
      {
        config: { access: access.user },
        schema: {
          tags: ['dashboards'],
          summary: `${summary.split(':')[0]}, for a logged-in member of the workspace`,
          params,
          ...query,
          response: { 200: response, ...sessionErrors },
        },
      },
      async (req: FigureRequest, reply) => {
        await memberOf(req.user!.id, req.params.slug);
        return send(req, reply, figure);
      },
    );
  }
}
