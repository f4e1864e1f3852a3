/** An endpoint's signing secret (reveal, rotate) and its delivery attempts, newest first. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../../plugins/access.js';
import { EndpointRepository } from '../../../../domain/webhooks/endpoints.js';
import { listAttempts } from '../../../../domain/webhooks/deliveries.js';
import { Attempt, AttemptsQuery, errors, Params, Secrets } from './schemas.js';
import { workspaceId, write } from './caller.js';

/** An endpoint's signing secret: reveal it, rotate it. */
export function secretRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool, config } = app.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);

  app.get(
    '/api/portal/webhooks/:id/secret',
    {
      config: { access: access.admin },
      schema: {
        tags: ['webhooks'],
        summary: "Reveal the endpoint's signing secret (admins)",
        params: Params,
        response: { 200: Secrets, ...errors },
      },
    },
    async (req) => repo.secrets(req.adminWorkspace!.id, req.params.id),
  );

  app.post(
    '/api/portal/webhooks/:id/secret/rotate',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'New signing secret; the previous one keeps signing (a second signature) for the grace period',
        params: Params,
        response: { 200: Secrets, ...errors },
      },
    },
    async (req) => {
      const secrets = await repo.rotate(workspaceId(req), req.params.id, config.WEBHOOK_SECRET_GRACE);
      req.log.info({ endpointId: req.params.id }, 'webhook secret rotated');
      return secrets;
    },
  );
}

/** An endpoint's delivery attempts, newest first. */
export function attemptRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool, config } = app.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);

  app.get(
    '/api/portal/webhooks/:id/attempts',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Attempts of this endpoint, newest first',
        params: Params,
        querystring: AttemptsQuery,
        response: { 200: Type.Object({ attempts: Type.Array(Attempt) }), ...errors },
      },
    },
    async (req) => {
      const endpoint = await repo.get(workspaceId(req), req.params.id);
      return {
        attempts: await listAttempts(pool, endpoint.id, {
          limit: req.query.limit ?? 100,
          messageId: req.query.messageId,
          before: req.query.before,
        }),
      };
    },
  );
}
