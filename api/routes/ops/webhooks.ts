/**
 * Operators' webhook replay ("one CLI command replays"): POST /api/ops/webhooks/:id/replay
 * with the operator's service key, for any workspace's endpoint (`npm run cli -- replay-webhooks`).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { AppError } from '../../../lib/errors.js';
import { replay } from '../../../domain/webhooks/delivery-retries.js';

export default async function opsWebhookRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool, config, temporal } = app.deps;

  app.post(
    '/api/ops/webhooks/:id/replay',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Replay one message, or every failed message of an endpoint created in [since, until)',
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
        body: Type.Union([
          Type.Object(
            { messageId: Type.String({ pattern: '^msg_[A-Za-z0-9_-]{1,96}$' }) },
            { additionalProperties: false },
          ),
          Type.Object(
            { since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) },
            { additionalProperties: false },
          ),
        ]),
        response: {
          202: Type.Object({
            endpointId: Type.String(),
            replayed: Type.Array(Type.String()),
            inProgress: Type.Array(Type.String()),
            note: Type.Optional(Type.String({ description: 'for a time range: only failed messages are replayed' })),
          }),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { rows } = await pool.query<{ enabled: boolean }>('SELECT enabled FROM webhook_endpoints WHERE id = $1', [
        req.params.id,
      ]);
      if (!rows[0]) throw new AppError('NOT_FOUND', `No webhook endpoint ${req.params.id}.`);
      if (!rows[0].enabled)
        throw new AppError('CONFLICT', 'This endpoint is disabled; its workspace must enable it before a replay.');
      const body = req.body;
      const what =
        'messageId' in body
          ? { messageId: body.messageId }
          : { since: new Date(body.since), until: body.until ? new Date(body.until) : new Date() };
      const result = await replay(
        pool,
        { temporal, taskQueue: config.TEMPORAL_TASK_QUEUE, config },
        req.params.id,
        what,
      );
      req.log.info({ endpointId: req.params.id, replayed: result.replayed.length }, 'webhook replay (operator)');
      return reply.code(202).send({ endpointId: req.params.id, ...result });
    },
  );
}
