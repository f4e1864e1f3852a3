/**
 * Ops API: per-workspace rate-limit overrides ("higher limits are granted by arrangement", §8): per
 * key, per workspace (all its keys together) and the cap on live keys.
 * Every API replica picks a change up within 10 seconds (domain/access/rate-limits.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';
import { getWorkspace } from '../../../domain/access/workspaces.js';
import {
  effectiveLimits,
  getLimitOverride,
  removeLimitOverride,
  setLimitOverride,
} from '../../../domain/access/workspace-limits.js';

const LimitsSchema = Type.Object({
  burst: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'bucket capacity per key (requests)' }),
  perSecond: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1_000_000,
    description: 'sustained requests per second per key',
  }),
  agentPerMinute: Type.Integer({ minimum: 1, maximum: 100_000, description: 'agent invocations per minute per key' }),
  workspaceBurst: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    description: 'bucket capacity of the workspace, all its keys together (never below burst)',
  }),
  workspacePerSecond: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1_000_000,
    description: 'sustained requests per second of the workspace, all its keys together (never below perSecond)',
  }),
  maxApiKeys: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    description: 'the most live API keys the workspace may hold',
  }),
});
const nullable = <T extends TSchema>(t: T, what: string) =>
  Type.Optional(Type.Union([t, Type.Null()], { description: `${what}; null or left out: the default` }));
const OverrideBody = Type.Object(
  {
    burst: LimitsSchema.properties.burst,
    perSecond: LimitsSchema.properties.perSecond,
    agentPerMinute: LimitsSchema.properties.agentPerMinute,
    workspaceBurst: nullable(
      LimitsSchema.properties.workspaceBurst,
      'bucket capacity of the workspace, all its keys together',
    ),
    workspacePerSecond: nullable(
      LimitsSchema.properties.workspacePerSecond,
      'sustained requests per second of the workspace',
    ),
    maxApiKeys: nullable(LimitsSchema.properties.maxApiKeys, 'the most live API keys the workspace may hold'),
  },
  { additionalProperties: false },
);

export default async function opsRateLimitRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const params = Type.Object({ slug: TenantName });

  const workspaceId = async (slug: string) => (await getWorkspace(app.deps.pool, slug)).id;

  app.get(
    '/api/ops/workspaces/:slug/rate-limits',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'The Workspace API limits of a workspace (override or defaults)',
        params,
        response: {
          200: Type.Intersect([LimitsSchema, Type.Object({ overridden: Type.Boolean() })]),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const id = await workspaceId(req.params.slug);
      const override = await getLimitOverride(app.deps.pool, id);
      return { ...effectiveLimits(app.deps.config, override), overridden: override !== undefined };
    },
  );

  app.put(
    '/api/ops/workspaces/:slug/rate-limits',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Set a per-workspace override of the Workspace API limits',
        params,
        body: OverrideBody,
        response: {
          200: Type.Intersect([LimitsSchema, Type.Object({ overridden: Type.Boolean() })]),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const id = await workspaceId(req.params.slug);
      await setLimitOverride(app.deps.pool, id, req.body);
      req.log.info({ workspace: req.params.slug, ...req.body }, 'rate-limit override set');
      return { ...effectiveLimits(app.deps.config, req.body), overridden: true };
    },
  );

  app.delete(
    '/api/ops/workspaces/:slug/rate-limits',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Remove the override: back to the default limits',
        params,
        response: { 204: Type.Null(), 401: Type.Ref('Problem'), 404: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const id = await workspaceId(req.params.slug);
      await removeLimitOverride(app.deps.pool, id);
      return reply.code(204).send(null);
    },
  );
}
