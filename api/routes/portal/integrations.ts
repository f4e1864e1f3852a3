/**
 * `GET /api/portal/integrations` (specification §4.1): the status of each integration of the
 * workspace, from the provider registry in domain/integrations/providers.ts. Members and admins.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { integrationStatuses } from '../../../domain/integrations/providers.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';

const Problem = Type.Ref('Problem');

export default async function integrationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/portal/integrations',
    {
      config: { access: access.member },
      schema: {
        tags: ['integrations'],
        summary: 'The status of each integration: ERP, bank consents, webhooks, agents',
        querystring: Type.Object({
          workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
        }),
        response: {
          200: Type.Object({
            items: Type.Array(
              Type.Object({
                id: Type.String(),
                name: Type.String(),
                state: Type.Union(
                  ['connected', 'pending', 'degraded', 'disconnected', 'not-configured'].map((s) => Type.Literal(s)),
                ),
                summary: Type.String(),
                details: Type.Record(Type.String(), Type.Unknown()),
              }),
            ),
          }),
          400: Problem,
          401: Problem,
          403: Problem,
        },
      },
    },
    async (req) => ({
      items: await integrationStatuses({ pool: app.deps.pool, workspace: req.memberWorkspace! }, undefined, req.log),
    }),
  );
}
