/**
 * Probes: /healthz (the process is alive) and /readyz (PostgreSQL, Redis and Temporal answer); and
 * /.well-known/service-key, where the account API's consumer processes report the service key they
 * hold (domain/service-keys/holders.ts; internal, not in the API document).
 */
import type { FastifyInstance } from 'fastify';
import { registerServiceKeyCheck } from '../../../domain/service-keys/service-key-auth.js';
import { Type } from 'typebox';
import { sendProblem } from '../../../lib/http.js';
import { access } from '../../plugins/access.js';

const withTimeout = (p: Promise<unknown>, ms: number) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms).unref()),
  ]);

export default async function healthRoutes(app: FastifyInstance) {
  registerServiceKeyCheck(app, () => app.serviceKeys, { hide: true });

  app.get(
    '/healthz',
    {
      config: { access: access.public },
      schema: { tags: ['probes'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { access: access.public },
      schema: {
        tags: ['probes'],
        response: {
          200: Type.Object({ status: Type.Literal('ready'), checks: Type.Record(Type.String(), Type.String()) }),
          503: Type.Ref('Problem'),
        },
      },
    },
    async (_req, reply) => {
      const { pool, redis, temporal } = app.deps;
      const checks: Record<string, () => Promise<unknown>> = {
        postgresql: () => pool.query('SELECT 1'),
        redis: () => redis.ping(),
        temporal: () => temporal.connection.workflowService.getSystemInfo({}),
      };
      const results = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          try {
            await withTimeout(check(), 2_000);
            return [name, 'ok'] as const;
          } catch (err) {
            return [name, (err as Error).message] as const;
          }
        }),
      );
      const failing = results.filter(([, r]) => r !== 'ok').map(([n]) => n);
      if (failing.length > 0) {
        return sendProblem(reply, 'UNAVAILABLE', `Not ready: ${failing.join(', ')} not reachable.`, {
          failing,
        });
      }
      return { status: 'ready' as const, checks: Object.fromEntries(results) };
    },
  );
}
