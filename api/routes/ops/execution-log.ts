/**
 * Ops API: run the execution-log retention now (the platform also runs it daily, see
 * worker schedules): creates the partitions ahead and drops the days older than the retention.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { dropExpiredPartitions, ensurePartitions } from '../../../domain/access/execution-log.js';
import { access } from '../../plugins/access.js';

export default async function opsExecutionLogRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/ops/execution-log/retention',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Apply the execution-log retention now: drop day partitions past it, create the next ones',
        response: {
          200: Type.Object({ retentionDays: Type.Integer(), dropped: Type.Array(Type.String()) }),
          401: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const { pool, config } = app.deps;
      await ensurePartitions(pool, config.EXECUTION_LOG_PARTITIONS_AHEAD);
      const dropped = await dropExpiredPartitions(pool, config.EXECUTION_LOG_RETENTION_DAYS);
      req.log.info({ dropped }, 'execution log retention applied');
      return { retentionDays: config.EXECUTION_LOG_RETENTION_DAYS, dropped };
    },
  );
}
