/**
 * Ops API: per-workspace rate-limit overrides ("higher limits are granted by arrangement", §8).
 * Every API replica picks a change up within 10 seconds (domain/access/rate-limits.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const LimitsSchema = Type.Object({
  burst: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'bucket capacity (requests)' }),
  perSecond: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'sustained requests per second' }),
  agentPerMinute: Type.Integer({ minimum: 1, maximum: 100_000, description: 'agent invocations per minute per key' }),
});

export default async function opsRateLimitRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const params = Type.Object({ slug: TenantName });

  async function workspaceId(slug: string): Promise<string> {
    const { rows } = await app.deps.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [slug]);
    if (!rows[0]) throw new AppError('NOT_FOUND', `Workspace "${slug}" does not exist.`);
    return rows[0].id;
  }

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
      const { rows } = await app.deps.pool.query<{ burst: number; perSecond: number; agentPerMinute: number }>(
        'SELECT burst, per_second AS "perSecond", agent_per_minute AS "agentPerMinute" FROM workspace_rate_limits WHERE workspace_id = $1',
        [id],
      );
      const c = app.deps.config;
      return rows[0]
        ? { ...rows[0], overridden: true }
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
      await app.deps.pool.query(
        `INSERT INTO workspace_rate_limits (workspace_id, burst, per_second, agent_per_minute) VALUES ($1, $2, $3, $4)
         ON CONFLICT (workspace_id) DO UPDATE
           SET burst = EXCLUDED.burst, per_second = EXCLUDED.per_second, agent_per_minute = EXCLUDED.agent_per_minute, updated_at = now()`,
        [id, burst, perSecond, agentPerMinute],
      );
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
      await app.deps.pool.query('DELETE FROM workspace_rate_limits WHERE workspace_id = $1', [id]);
      return reply.code(204).send(null);
    },
  );
}
