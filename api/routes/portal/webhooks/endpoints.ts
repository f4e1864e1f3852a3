/** The workspace's webhook endpoints: list, create, read, change, delete (never their secrets). */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../../lib/errors.js';
import { checkEventTypes, EndpointRepository } from '../../../../domain/webhooks/endpoints.js';
import { urlProblems } from '../../../../domain/webhooks/addresses.js';
import { addressPolicy } from '../../../../domain/webhooks/delivery-retries.js';
import { Endpoint, EndpointChange, errors, NewEndpoint, Params } from './schemas.js';
import { workspaceId, write } from './caller.js';

type CheckUrl = (url: string) => void;

export function endpointRoutes(fastify: FastifyInstance) {
  const { pool, config } = fastify.deps;
  const repo = new EndpointRepository(pool, config.SECRETS_KEY);
  const policy = addressPolicy(config);
  const checkUrl: CheckUrl = (url) => {
    const problems = urlProblems(url, { allowHttp: config.WEBHOOK_ALLOW_HTTP, policy });
    if (problems.length > 0)
      throw new AppError('BAD_REQUEST', `Invalid webhook URL: ${problems.join('; ')}.`, { errors: problems });
  };
  listEndpointsRoute(fastify, repo);
  createEndpointRoute(fastify, repo, checkUrl);
  getEndpointRoute(fastify, repo);
  changeEndpointRoute(fastify, repo, checkUrl);
  deleteEndpointRoute(fastify, repo);
}

function listEndpointsRoute(fastify: FastifyInstance, repo: EndpointRepository) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
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
}

function createEndpointRoute(fastify: FastifyInstance, repo: EndpointRepository, checkUrl: CheckUrl) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/webhooks',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Register a webhook endpoint; the answer shows its signing secret',
        body: NewEndpoint,
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
}

function getEndpointRoute(fastify: FastifyInstance, repo: EndpointRepository) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
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
}

function changeEndpointRoute(fastify: FastifyInstance, repo: EndpointRepository, checkUrl: CheckUrl) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().patch(
    '/api/portal/webhooks/:id',
    {
      ...write,
      schema: {
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint (enabled: true re-enables a disabled one)',
        params: Params,
        body: EndpointChange,
        response: { 200: Endpoint, ...errors },
      },
    },
    async (req) => {
      if (req.body.url !== undefined) checkUrl(req.body.url);
      checkEventTypes(req.body.eventTypes);
      return repo.update(workspaceId(req), req.params.id, req.body);
    },
  );
}

function deleteEndpointRoute(fastify: FastifyInstance, repo: EndpointRepository) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().delete(
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
