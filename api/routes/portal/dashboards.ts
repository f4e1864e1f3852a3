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
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AlertsSchema, CashflowSchema, KpisSchema, createDashboardService } from '../../../domain/erp/dashboards.js';
import { TenantName } from '../../schemas/common.js';
import { AppError } from '../../../lib/errors.js';
import { membershipsOf } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';

const MEMO_MS = 1_000;
const errors = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  429: Type.Ref('Problem'),
  502: Type.Ref('Problem'),
  503: Type.Ref('Problem'),
  504: Type.Ref('Problem'),
};

export default async function dashboardRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const params = Type.Object({ slug: TenantName });
  // its Redis cache on the hot path's auto-pipelined connection (see api/plugins/workspace-auth.ts)
  const service =
    app.deps.dashboardService ?? createDashboardService({ pool: app.deps.pool, config: app.deps.config, redis: app.workspaceAuth.redis });

  // A first-level cache in the process for one second in front of the service's 30-second Redis
  // cache, holding each answer already serialized (by the route's own response schema): a busy
  // workspace's figures are fetched, parsed and serialized once a second per replica, and
  // concurrent first requests share one computation. Failures are not kept.
  const recent = new Map<string, { at: number; json: Promise<string> }>();
  function memo(key: string, reply: FastifyReply, compute: () => Promise<unknown>): Promise<string> {
    const hit = recent.get(key);
    if (hit && Date.now() - hit.at < MEMO_MS) return hit.json;
    const json = compute().then((value) => reply.serializeInput(value as Record<string, unknown>, '200') as string);
    recent.set(key, { at: Date.now(), json });
    json.catch(() => recent.delete(key));
    if (recent.size > 10_000) recent.delete(recent.keys().next().value!);
    return json;
  }
  const send = async (reply: FastifyReply, json: Promise<string>) => reply.type('application/json; charset=utf-8').send(await json);
  const memberOf = async (userId: string, slug: string) => {
    const [row] = await membershipsOf(app.deps.pool, userId, slug);
    if (!row) throw new AppError('FORBIDDEN', `You are not a member of workspace "${slug}".`);
  };

  app.get(
    '/api/portal/odoo/:slug/kpis',
    {
      config: { access: access.key('dashboard:read') },
      schema: {
        tags: ['dashboards'],
        summary: 'KPIs: revenue this month, receivables (overdue), payables, cash balance',
        params,
        response: { 200: KpisSchema, ...errors },
      },
    },
    (req, reply) => send(reply, memo(`${req.params.slug}:kpis`, reply, () => service.kpis(req.params.slug))),
  );

  app.get(
    '/api/portal/odoo/:slug/cashflow',
    {
      config: { access: access.key('dashboard:read') },
      schema: {
        tags: ['dashboards'],
        summary: 'Cash in and out per month',
        params,
        querystring: Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 })) }),
        response: { 200: CashflowSchema, ...errors },
      },
    },
    (req, reply) => {
      const { slug } = req.params;
      const months = req.query.months;
      return send(reply, memo(`${slug}:cashflow:${months ?? ''}`, reply, () => service.cashflow(slug, { months })));
    },
  );

  app.get(
    '/api/portal/odoo/:slug/alerts',
    {
      config: { access: access.key('dashboard:read') },
      schema: {
        tags: ['dashboards'],
        summary: 'Alerts: overdue invoices, unreconciled bank lines',
        params,
        response: { 200: AlertsSchema, ...errors },
      },
    },
    (req, reply) => send(reply, memo(`${req.params.slug}:alerts`, reply, () => service.alerts(req.params.slug))),
  );

  // the same figures for a logged-in member of the workspace (the browser portal)
  const sessionErrors = { 400: Type.Ref('Problem'), 401: Type.Ref('Problem'), 403: Type.Ref('Problem'), 404: Type.Ref('Problem'), 502: Type.Ref('Problem'), 503: Type.Ref('Problem'), 504: Type.Ref('Problem') };
  app.get(
    '/api/portal/workspaces/:slug/dashboard/kpis',
    {
      config: { access: access.user },
      schema: { tags: ['dashboards'], summary: 'KPIs, for a logged-in member of the workspace', params, response: { 200: KpisSchema, ...sessionErrors } },
    },
    async (req, reply) => {
      await memberOf(req.user!.id, req.params.slug);
      return send(reply, memo(`${req.params.slug}:kpis`, reply, () => service.kpis(req.params.slug)));
    },
  );
  app.get(
    '/api/portal/workspaces/:slug/dashboard/cashflow',
    {
      config: { access: access.user },
      schema: {
        tags: ['dashboards'],
        summary: 'Cash in and out per month, for a logged-in member of the workspace',
        params,
        querystring: Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 })) }),
        response: { 200: CashflowSchema, ...sessionErrors },
      },
    },
    async (req, reply) => {
      const { slug } = req.params;
      await memberOf(req.user!.id, slug);
      const months = req.query.months;
      return send(reply, memo(`${slug}:cashflow:${months ?? ''}`, reply, () => service.cashflow(slug, { months })));
    },
  );
  app.get(
    '/api/portal/workspaces/:slug/dashboard/alerts',
    {
      config: { access: access.user },
      schema: { tags: ['dashboards'], summary: 'Alerts, for a logged-in member of the workspace', params, response: { 200: AlertsSchema, ...sessionErrors } },
    },
    async (req, reply) => {
      await memberOf(req.user!.id, req.params.slug);
      return send(reply, memo(`${req.params.slug}:alerts`, reply, () => service.alerts(req.params.slug)));
    },
  );
}
