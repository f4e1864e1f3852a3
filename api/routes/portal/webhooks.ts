/**
 * Tenant webhooks of the Workspace API (specification §2.4, §5.3): endpoints (URL, event
 * types or all, description, enabled), their secrets, their attempts, a test send and replay.
 * Workspace admins (session + X-Workspace) and keys with `webhooks:write` (DESIGN §5) may call
 * them, each for its own workspace only. Secrets appear on create, reveal and rotate, never in lists.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { Text } from '../../schemas/common.js';
import { AppError } from '../../../lib/errors.js';
import {
  checkEventTypes,
  EndpointRepository,
  sendingEndpoints,
  WEBHOOK_EVENT_TYPES,
} from '../../../domain/webhooks/endpoints.js';
import { urlProblems } from '../../../domain/webhooks/addresses.js';
import { listAttempts, recordAttempts, TEST_EVENT_TYPE } from '../../../domain/webhooks/deliveries.js';
import { addressPolicy, replay, webhookSender } from '../../../domain/webhooks/delivery-retries.js';
import { webhookHeaders } from '../../../domain/webhooks/signing.js';

const EventType = Type.String({
  pattern: '^[A-Za-z0-9._-]{1,100}$',
  description: `an event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
});
const EventTypes = Type.Union([Type.Array(EventType, { minItems: 1, maxItems: 50, uniqueItems: true }), Type.Null()], {
  description: 'the event types this endpoint receives; null (default) for every type',
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'https URL (http only where configured); checked again at connect time',
});
const Endpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Type.String(),
  eventTypes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  failingSince: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const Secrets = Type.Object({
  secret: Type.String({ description: 'whsec_… (Standard Webhooks)' }),
  previousSecret: Type.Union([Type.String(), Type.Null()], {
    description: 'still signing (a second signature) until previousSecretExpiresAt',
  }),
  previousSecretExpiresAt: Type.Union([Type.String(), Type.Null()]),
});
const Attempt = Type.Object({
  id: Type.String(),
  messageId: Type.String(),
  eventType: Type.Union([Type.String(), Type.Null()], {
    description: "the message's event type (webhook.test for a test send)",
  }),
  attemptedAt: Type.String(),
  trigger: Type.String(),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  durationMs: Type.Integer(),
  outcome: Type.String(),
  error: Type.Union([Type.String(), Type.Null()]),
  responseHeaders: Type.Record(Type.String(), Type.String()),
  responseExcerpt: Type.String(),
});
const Params = Type.Object({ id: Type.String({ format: 'uuid' }) });
const MessageId = Type.String({
  pattern: '^msg_[A-Za-z0-9_-]{1,96}$',
  description: 'a message id (the webhook-id receivers saw)',
});
const errors = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  429: Type.Ref('Problem'),
};
const write = { config: { access: access.adminOrKey('webhooks:write') } };

/** The workspace the caller acts on: the key's, or the admin's (X-Workspace). */
function workspaceId(req: FastifyRequest): string {
  const id = req.workspace?.id ?? req.adminWorkspace?.id;
  if (!id) throw new AppError('UNAUTHORIZED', 'No workspace for this request.');
  return id;
}

export default async function webhookRoutes(fastify: FastifyInstance) {
  endpointRoutes(fastify);
  secretRoutes(fastify);
  attemptRoutes(fastify);
  deliveryRoutes(fastify);
}

/** The workspace's webhook endpoints: list, create, read, change, delete (never their secrets). */
function endpointRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool, config } = app.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);
  const policy = addressPolicy(config);

  const checkUrl = (url: string) => {
    const problems = urlProblems(url, { allowHttp: config.WEBHOOK_ALLOW_HTTP, policy });
    if (problems.length > 0)
      throw new AppError('BAD_REQUEST', `Invalid webhook URL: ${problems.join('; ')}.`, { errors: problems });
  };

  app.get(
    '/api/portal/webhooks',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'List webhook endpoints (no secrets)',
        response: { 200: Type.Object({ endpoints: Type.Array(Endpoint) }), ...errors },
      },
    },
    async (req) => ({
      endpoints: await repo.list(workspaceId(req)),
    }),
  );

  app.post(
    '/api/portal/webhooks',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Register a webhook endpoint; the answer shows its signing secret',
        body: Type.Object(
          {
            url: Url,
            description: Type.Optional(Text({ maxLength: 500 })),
            eventTypes: Type.Optional(EventTypes),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ endpoint: Endpoint, secret: Type.String() }), ...errors },
      },
    },
    async (req, reply) => {
      checkUrl(req.body.url);
      checkEventTypes(req.body.eventTypes);
      const created = await repo.create(workspaceId(req), req.body);
      req.log.info({ endpointId: created.endpoint.id }, 'webhook endpoint created');
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/portal/webhooks/:id',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'One webhook endpoint (no secret)',
        params: Params,
        response: { 200: Endpoint, ...errors },
      },
    },
    async (req) => repo.get(workspaceId(req), req.params.id),
  );

  app.patch(
    '/api/portal/webhooks/:id',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint (enabled: true re-enables a disabled one)',
        params: Params,
        body: Type.Object(
          {
            url: Type.Optional(Url),
            description: Type.Optional(Text({ maxLength: 500 })),
            eventTypes: Type.Optional(EventTypes),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: Endpoint, ...errors },
      },
    },
    async (req) => {
      if (req.body.url !== undefined) checkUrl(req.body.url);
      checkEventTypes(req.body.eventTypes);
      return repo.update(workspaceId(req), req.params.id, req.body);
    },
  );

  app.delete(
    '/api/portal/webhooks/:id',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint',
        params: Params,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (req, reply) => {
      await repo.remove(workspaceId(req), req.params.id);
      return reply.code(204).send(null);
    },
  );
}

/** An endpoint's signing secret: reveal it, rotate it. */
function secretRoutes(fastify: FastifyInstance) {
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
function attemptRoutes(fastify: FastifyInstance) {
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
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
            messageId: Type.Optional(MessageId),
            before: Type.Optional(Type.String({ format: 'uuid', description: 'attempt id: older than this (paging)' })),
          },
          { additionalProperties: false },
        ),
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

/** Deliveries on demand: a test event, a replay of past events. */
function deliveryRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool, config } = app.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);
  const sender = webhookSender(config);
  app.addHook('onClose', async () => sender.close());
  const starter = { temporal: app.deps.temporal, taskQueue: config.TEMPORAL_TASK_QUEUE, config };

  app.post(
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
      const attemptedAt = new Date();
      const result = await sender.send(
        endpoint.url,
        webhookHeaders({ secrets: sending!.secrets, msgId: messageId, body, userAgent: config.WEBHOOK_USER_AGENT }),
        body,
      );
      await recordAttempts(pool, [
        { endpointId: endpoint.id, messageId, trigger: 'test', attemptedAt, result, status: null },
      ]);
      const [attempt] = await listAttempts(pool, endpoint.id, { limit: 1, messageId });
      return attempt!;
    },
  );

  app.post(
    '/api/portal/webhooks/:id/replay',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Replay one message, or every failed message of this endpoint created in [since, until)',
        params: Params,
        body: Type.Union([
          Type.Object({ messageId: MessageId }, { additionalProperties: false }),
          Type.Object(
            { since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) },
            { additionalProperties: false },
          ),
        ]),
        response: {
          202: Type.Object({
            replayed: Type.Array(Type.String()),
            inProgress: Type.Array(Type.String()),
            note: Type.Optional(Type.String({ description: 'for a time range: only failed messages are replayed' })),
          }),
          ...errors,
        },
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
