/**
 * The workspace's execution log (specification §5.2 rule 4): every call made with one of its keys,
 * newest first, for admins of the workspace logged in interactively. Keyset pagination: pass the
 * `nextCursor` of a page as `cursor` to get the next one.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { readExecutionLog } from '../../../domain/access/execution-log.js';
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

export default async function executionLogRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/portal/execution-log',
    {
      config: { access: access.admin },
      schema: {
        tags: ['apikeys'],
        summary: "The workspace's execution log: calls made with its API keys (90-day retention)",
        querystring: Type.Object({
          workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
          cursor: Type.Optional(Text({ maxLength: 200 })),
        }),
        response: {
          200: Type.Object({
            items: Type.Array(
              Type.Object({
                id: Type.String(),
                occurredAt: Type.String({ format: 'date-time' }),
                keyPrefix: Type.String(),
                method: Type.String(),
                route: Type.String(),
                status: Type.Integer(),
                latencyMs: Type.Number(),
                requestId: Type.String(),
              }),
            ),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          403: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      // rows still buffered in this process are written first, so an admin sees their latest calls
      await app.workspaceAuth.executionLog.flush();
      return readExecutionLog(app.deps.pool, req.adminWorkspace!.id, { limit: req.query.limit ?? 50, cursor: req.query.cursor });
    },
  );
}
