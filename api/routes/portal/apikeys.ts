/**
 * Workspace API key management (specification §2.1, §3.1, §4.1, §5.2 rule 3; DESIGN §5): tenant
 * admins, logged in interactively, list, create and revoke the keys of their workspace. A
 * workspace key can never do this (403). The plaintext token is in the create response only.
 *
 * `GET /api/portal/apikeys/self` is the other side: what a workspace key learns about itself.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { checkScopes, createApiKey, listApiKeys, revokeApiKey, SCOPES } from '../../../domain/access/api-keys.js';
import { AppError } from '../../../lib/errors.js';
import { effectiveLimits, getLimitOverride } from '../../../domain/access/workspace-limits.js';
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const ApiKeySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  prefix: Type.String({ description: 'non-secret start of the token, e.g. ws_live_ABCD2345' }),
  scopes: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'kept within a few seconds of true (written in batches)',
  }),
});

const WorkspaceQuery = Type.Object({
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
});
const errors = { 400: Type.Ref('Problem'), 401: Type.Ref('Problem'), 403: Type.Ref('Problem') };

const NewApiKey = Type.Object(
  {
    name: Text({ minLength: 1, maxLength: 100 }),
    scopes: Type.Optional(
      Type.Array(Type.String({ enum: Object.keys(SCOPES) }), {
        minItems: 1,
        maxItems: 20,
        description: 'default ["dashboard:read"]',
      }),
    ),
  },
  { additionalProperties: false },
);
const CreatedApiKey = Type.Intersect([
  ApiKeySchema,
  Type.Object({ token: Type.String({ description: 'shown once; store it now' }) }),
]);
const KeyItself = Type.Object({
  workspace: Type.Object({ id: Type.String(), slug: Type.String() }),
  key: Type.Object({ id: Type.String(), prefix: Type.String(), scopes: Type.Array(Type.String()) }),
});

export default async function apiKeyRoutes(fastify: FastifyInstance) {
  listKeysRoute(fastify);
  createKeyRoute(fastify);
  revokeKeyRoute(fastify);
  keySelfRoute(fastify);
}

function listKeysRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/portal/apikeys',
    {
      config: { access: access.admin },
      schema: {
        tags: ['apikeys'],
        summary: 'List the workspace API keys (never the token or its hash)',
        querystring: WorkspaceQuery,
        response: { 200: Type.Object({ items: Type.Array(ApiKeySchema) }), ...errors },
      },
    },
    async (req) => ({ items: await listApiKeys(pool, req.adminWorkspace!.id) }),
  );
}

/** A new key within the workspace's cap of live keys; its plaintext token is in this answer only. */
function createKeyRoute(fastify: FastifyInstance) {
  const { pool, config } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/apikeys',
    {
      config: { access: access.admin },
      schema: {
        tags: ['apikeys'],
        summary: 'Create a workspace API key; the response carries the plaintext token, once',
        querystring: WorkspaceQuery,
        body: NewApiKey,
        response: {
          201: CreatedApiKey,
          409: Type.Ref('Problem', {
            description: 'the workspace holds its cap of live keys (maxKeys in the problem)',
          }),
          ...errors,
        },
      },
    },
    async (req, reply) => {
      const scopes = checkScopes(req.body.scopes);
      const created = await createApiKey(pool, {
        workspaceId: req.adminWorkspace!.id,
        name: req.body.name,
        scopes,
        createdBy: req.user!.id,
        bcryptCost: config.BCRYPT_COST,
        maxKeys: effectiveLimits(config, await getLimitOverride(pool, req.adminWorkspace!.id)).maxApiKeys,
      });
      req.log.info(
        { workspaceId: req.adminWorkspace!.id, keyId: created.id, keyPrefix: created.prefix, scopes },
        'workspace api key created',
      );
      return reply.code(201).header('cache-control', 'no-store').send(created);
    },
  );
}

/** Revoking stops the key at once on every replica (the revocation feed) and in this one's cache. */
function revokeKeyRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.delete(
    '/api/portal/apikeys/:id',
    {
      config: { access: access.admin },
      schema: {
        tags: ['apikeys'],
        summary: 'Revoke a workspace API key: it stops working at once, on every replica',
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
        querystring: WorkspaceQuery,
        response: { 204: Type.Null(), 404: Type.Ref('Problem'), ...errors },
      },
    },
    async (req, reply) => {
      const ws = req.adminWorkspace!;
      const { revocations } = app.workspaceAuth;
      const announce = (keyId: string) => revocations.announce(keyId);
      const revoked = await revokeApiKey(
        { pool: app.deps.pool, redis: app.deps.redis, announce },
        ws.id,
        req.params.id,
      );
      if (!revoked) throw new AppError('NOT_FOUND', `Workspace "${ws.slug}" has no API key ${req.params.id}.`);
      app.workspaceAuth.verifier.forget(req.params.id);
      req.log.info({ workspaceId: ws.id, keyId: req.params.id }, 'workspace api key revoked');
      return reply.code(204).send(null);
    },
  );
}

function keySelfRoute(fastify: FastifyInstance) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/portal/apikeys/self',
    {
      config: { access: access.key(null) },
      schema: {
        tags: ['apikeys'],
        summary: 'The calling workspace key: its workspace, prefix and scopes (any valid key)',
        response: { 200: KeyItself, 401: Type.Ref('Problem'), 429: Type.Ref('Problem') },
      },
    },
    async (req) => ({ workspace: req.workspace!, key: req.apiKey! }),
  );
}
