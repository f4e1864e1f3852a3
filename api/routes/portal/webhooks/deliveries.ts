/** Deliveries on demand: a test event, a replay of past events. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError } from '../../../../lib/errors.js';
import { EndpointRepository, sendingEndpoints } from '../../../../domain/webhooks/endpoints.js';
import { listAttempts, recordAttempts, TEST_EVENT_TYPE } from '../../../../domain/webhooks/deliveries.js';
import { replay, webhookSender } from '../../../../domain/webhooks/delivery-retries.js';
import { attemptDelivery, retrySettings } from '../../../../domain/webhooks/attempt-delivery.js';
import { Attempt, errors, Params, ReplayAnswer, ReplayRequest } from './schemas.js';
import { workspaceId, write } from './caller.js';

export function deliveryRoutes(fastify: FastifyInstance) {
  const { pool, config } = fastify.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);
  const sender = webhookSender(config);
  fastify.addHook('onClose', async () => sender.close());
  testSendRoute(fastify, repo, sender);
  replayRoute(fastify, repo);
}

/** Sends a signed webhook.test event to the endpoint now and answers the recorded attempt. */
function testSendRoute(fastify: FastifyInstance, repo: EndpointRepository, sender: ReturnType<typeof webhookSender>) {
  const { pool, config } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/webhooks/:id/test',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Send a signed sample event (webhook.test) now and answer the attempt',
        params: Params,
        response: { 200: Attempt, ...errors },
      },
    },
    async (req) => {
      const endpoint = await repo.get(workspaceId(req), req.params.id);
      const [sending] = await sendingEndpoints(pool, config.SECRETS_KEY, { id: endpoint.id });
      const messageId = `msg_test_${randomBytes(16).toString('base64url')}`;
      const body = JSON.stringify({
        type: TEST_EVENT_TYPE,
        timestamp: new Date().toISOString(),
        data: { endpointId: endpoint.id, message: 'This is a test event from Plana.' },
      });
      const sent = await attemptDelivery(
        { sender, userAgent: config.WEBHOOK_USER_AGENT, settings: retrySettings(config) },
        { endpoint: sending!, messageId, payload: body, trigger: 'test', attemptsBefore: 0 },
      );
      // a test send is no delivery: nothing to move on, nothing to retry
      await recordAttempts(pool, [{ ...sent, status: null, nextAttemptAt: undefined }]);
      const [attempt] = await listAttempts(pool, endpoint.id, { limit: 1, messageId });
      return attempt!;
    },
  );
}

/** Replays one message, or the endpoint's failed messages of a time range (enabled endpoints only). */
function replayRoute(fastify: FastifyInstance, repo: EndpointRepository) {
  const { pool, config, temporal } = fastify.deps;
  const starter = { temporal, taskQueue: config.TEMPORAL_TASK_QUEUE, config };
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/webhooks/:id/replay',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Replay one message, or every failed message of this endpoint created in [since, until)',
        params: Params,
        body: ReplayRequest,
        response: { 202: ReplayAnswer, ...errors },
      },
    },
    async (req, reply) => {
      const endpoint = await repo.get(workspaceId(req), req.params.id);
      if (!endpoint.enabled)
        throw new AppError('CONFLICT', 'This endpoint is disabled; enable it (PATCH enabled: true) before replaying.');
      const body = req.body;
      const what =
        'messageId' in body
          ? { messageId: body.messageId }
          : { since: new Date(body.since), until: body.until ? new Date(body.until) : new Date() };
      const result = await replay(pool, starter, endpoint.id, what);
      req.log.info({ endpointId: endpoint.id, replayed: result.replayed.length }, 'webhook replay');
      return reply.code(202).send(result);
    },
  );
}
