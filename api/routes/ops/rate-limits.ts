/**
 * Ops API: per-workspace rate-limit overrides ("higher limits are granted by arrangement", §8).
 * Every API replica picks a change up within 10 seconds (domain/access/rate-limits.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';
import { getWorkspace } from '../../../domain/access/workspaces.js';
import { getLimitOverride, removeLimitOverride, setLimitOverride } from '../../../domain/access/rate-limits.js';

const LimitsSchema = Type.Object({
  burst: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'bucket capacity (requests)' }),
  perSecond: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'sustained requests per second' }),
  agentPerMinute: Type.Integer({ minimum: 1, maximum: 100_000, description: 'agent invocations per minute per key' }),
});

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
        response: { 200: Type.Intersect([LimitsSchema, Type.Object({ overridden: Type.Boolean() })]), 401: Type.Ref('Problem'), 404: Type.Ref('Problem') },
      },
    },
    async (req) => {
      const id = await workspaceId(req.params.slug);
      const override = await getLimitOverride(app.deps.pool, id);
      const c = app.deps.config;
      return override
        ? { ...override, overridden: true }
        : { burst: c.RATE_LIMIT_BURST, perSecond: c.RATE_LIMIT_PER_SECOND, agentPerMinute: c.RATE_LIMIT_AGENT_PER_MINUTE, overridden: false };
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
        body: Type.Object(LimitsSchema.properties, { additionalProperties: false }),
        response: { 200: Type.Intersect([LimitsSchema, Type.Object({ overridden: Type.Boolean() })]), 400: Type.Ref('Problem'), 401: Type.Ref('Problem'), 404: Type.Ref('Problem') },
      },
    },
    async (req) => {
      const id = await workspaceId(req.params.slug);
      const { burst, perSecond, agentPerMinute } = req.body;
      await setLimitOverride(app.deps.pool, id, { burst, perSecond, agentPerMinute });
      req.log.info({ workspace: req.params.slug, burst, perSecond, agentPerMinute }, 'rate-limit override set');
      return { burst, perSecond, agentPerMinute, overridden: true };
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
