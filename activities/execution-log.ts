/** The execution-log retention as an activity (run daily by the `execution-log-retention` schedule). */
import type pg from 'pg';
import type { Config } from '../lib/config.js';
import { dropExpiredPartitions, ensurePartitions } from '../domain/access/execution-log.js';

export interface ExecutionLogDeps {
  pool: pg.Pool;
  config: Pick<Config, 'EXECUTION_LOG_RETENTION_DAYS' | 'EXECUTION_LOG_PARTITIONS_AHEAD'>;
}

export const createExecutionLogActivities = ({ pool, config }: ExecutionLogDeps) => ({
  /** Creates the next days' partitions and drops the days past the retention; idempotent. */
  async applyExecutionLogRetention(): Promise<{ retentionDays: number; dropped: string[] }> {
    await ensurePartitions(pool, config.EXECUTION_LOG_PARTITIONS_AHEAD);
    const dropped = await dropExpiredPartitions(pool, config.EXECUTION_LOG_RETENTION_DAYS);
    return { retentionDays: config.EXECUTION_LOG_RETENTION_DAYS, dropped };
  },
});
