/**
 * The execution-log retention as the platform runs it: a Temporal Schedule starts
 * `applyRetention('execution-log')` on the real dev server, a real worker runs its activity, and the day
 * partitions past 90 days are gone from the real PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { ensureExecutionLogRetentionSchedule } from '../../domain/access/execution-log-schedule.js';
import { createWorker } from '../../worker/index.js';
import { erpTestConfig } from '../support/erp-tenant.js';
import { workflowBundle } from '../support/env.js';
import { runScheduleNow } from '../support/schedules.js';

let cfg: Config;
let pool: Pool;
let temporal: Client;
let worker: Worker;
let workerConnection: NativeConnection;
let closeDeps: () => Promise<void>;
let workerRun: Promise<void>;

beforeAll(async () => {
  cfg = await erpTestConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  temporal = new Client({ connection: await Connection.connect({ address: cfg.TEMPORAL_ADDRESS }) });
  ({ worker, connection: workerConnection, closeDeps } = await createWorker(cfg, { workflowBundle: workflowBundle() }));
  workerRun = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await workerRun;
  await workerConnection?.close();
  await closeDeps?.();
  await temporal?.connection.close();
  await pool?.end();
});

const partitions = async () =>
  (
    await pool.query<{ name: string }>(
      "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'execution_log'::regclass",
    )
  ).rows.map((r) => r.name);

describe('the execution-log-retention schedule', () => {
  it('runs the execution-log retention, which drops the partitions older than 90 days and keeps the recent ones', async () => {
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    await pool.query('SELECT execution_log_ensure_partitions($1::date, 1)', [day(95)]);
    await pool.query('SELECT execution_log_ensure_partitions($1::date, 1)', [day(60)]);
    const old = `execution_log_p${day(95).replace(/-/g, '')}`;
    const kept = `execution_log_p${day(60).replace(/-/g, '')}`;
    expect(await partitions()).toEqual(expect.arrayContaining([old, kept]));

    const scheduleId = `execution-log-retention-${randomUUID().slice(0, 8)}`;
    expect(
      await ensureExecutionLogRetentionSchedule(temporal, {
        taskQueue: cfg.TEMPORAL_TASK_QUEUE,
        retentionDays: 90,
        scheduleId,
      }),
    ).toBe('created');
    expect(
      await ensureExecutionLogRetentionSchedule(temporal, {
        taskQueue: cfg.TEMPORAL_TASK_QUEUE,
        retentionDays: 90,
        scheduleId,
      }),
    ).toBe('exists');
    const schedule = temporal.schedule.getHandle(scheduleId);
    try {
      const result = await runScheduleNow<{ retentionDays: number; dropped: string[] }>(temporal, scheduleId);
      expect(result.retentionDays).toBe(90);
      // (another test file may apply the retention at the same time: every name dropped is past it)
      const cutoff = day(90).replace(/-/g, '');
      for (const name of result.dropped) expect(name.slice(-8) < cutoff, name).toBe(true);
      expect(result.dropped).not.toContain(kept);
      const now = await partitions();
      expect(now).not.toContain(old);
      expect(now).toContain(kept);
      // a worker started with another task queue brings the schedule to it (the configuration changed)
      const moved = { taskQueue: `${cfg.TEMPORAL_TASK_QUEUE}-moved`, retentionDays: 90, scheduleId };
      expect(await ensureExecutionLogRetentionSchedule(temporal, moved)).toBe('updated');
      expect((await schedule.describe()).action).toMatchObject({ taskQueue: moved.taskQueue });
      expect(await ensureExecutionLogRetentionSchedule(temporal, moved)).toBe('exists');
    } finally {
      await schedule.delete();
    }
  });
});
