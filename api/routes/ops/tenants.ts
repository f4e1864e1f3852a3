/**
 * The internal ops API for support and operators (never exposed to customers), guarded by the
 * ops service key in X-API-Key.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { startWelcomeEmail } from '../../../domain/notifications/welcome.js';
import { temporalUiLink } from '../../../lib/temporal.js';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

export default async function opsTenantRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/ops/tenants/:name/welcome',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Send the welcome e-mail of a tenant (again); 409 unless the tenant is Ready',
        params: Type.Object({ name: TenantName }),
        response: {
          202: Type.Object({
            tenant: Type.String(),
            workflowId: Type.String(),
            runId: Type.String(),
            email: Type.String(),
            workspace: Type.String(),
            temporalUiUrl: Type.String(),
          }),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { config, pool, temporal } = app.deps;
      const started = await startWelcomeEmail(
        { pool, temporal, taskQueue: config.TEMPORAL_TASK_QUEUE },
        req.params.name,
      );
      req.log.info({ tenant: started.tenant, workflowId: started.workflowId }, 'welcome e-mail started');
      return reply.code(202).send({ ...started, temporalUiUrl: temporalUiLink(config, started.workflowId) });
    },
  );
}
