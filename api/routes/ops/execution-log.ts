/**
 * Ops API: a workspace's execution log as the log store holds it (the worker mirrors it there from
 * PostgreSQL, domain/access/execution-log-mirror.ts), and the PostgreSQL retention run now (the
 * platform also runs it daily, see worker schedules): creates the partitions ahead and drops the
 * days older than the retention.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { dropExpiredPartitions, ensurePartitions } from '../../../domain/access/execution-log.js';
import { readStoredExecutionLog, SINCE_PATTERN } from '../../../domain/access/execution-log-store.js';
import { getWorkspace } from '../../../domain/access/workspaces.js';
import { ExecutionLogCall, TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

export default async function opsExecutionLogRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/ops/workspaces/:slug/execution-log',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: "A workspace's execution log from the log store: its calls over a recent period, newest first",
        params: Type.Object({ slug: TenantName }),
        querystring: Type.Object({
          since: Type.String({ pattern: SINCE_PATTERN, default: '1h', description: 'how far back: 30m, 1h, 7d' }),
          route: Type.Optional(
            Text({ minLength: 1, maxLength: 200, description: 'routes containing this, e.g. /kpis' }),
          ),
          status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
          requestId: Type.Optional(
            Type.String({
              pattern: '^[\\w.-]{1,64}$',
              description: "the call with this request id: a problem body's requestId (its trace id)",
            }),
          ),
          limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
        }),
        response: {
          200: Type.Object({ items: Type.Array(ExecutionLogCall) }),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          503: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const workspace = await getWorkspace(app.deps.pool, req.params.slug);
      const items = await readStoredExecutionLog(app.deps.config.LOG_STORE_URL, workspace.id, req.query);
      return { items };
    },
  );

  app.post(
    '/api/ops/execution-log/retention',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Apply the execution-log retention now: drop day partitions past it, create the next ones',
        response: {
          200: Type.Object({ retentionDays: Type.Integer(), dropped: Type.Array(Type.String()) }),
          401: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const { pool, config } = app.deps;
      await ensurePartitions(pool, config.EXECUTION_LOG_PARTITIONS_AHEAD);
      const dropped = await dropExpiredPartitions(pool, config.EXECUTION_LOG_RETENTION_DAYS);
      req.log.info({ dropped }, 'execution log retention applied');
      return { retentionDays: config.EXECUTION_LOG_RETENTION_DAYS, dropped };
    },
  );
}
