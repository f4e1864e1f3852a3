/**
 * Webhook history retention: messages older than the retention whose deliveries have all ended
 * (delivered or failed; never one still pending or retrying) are deleted with their deliveries, and
 * attempts older than the retention with them. In batches, so a large backlog never holds a long
 * lock. Run daily by the `webhook-retention` schedule (workflows/apply-retention.ts).
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { DAY_MS, ensureIntervalSchedule, type ScheduleOutcome } from '../temporal-schedule.js';
import { APPLY_RETENTION_WORKFLOW } from '../retention-workflow-contract.js';

export const WEBHOOK_RETENTION_SCHEDULE_ID = 'webhook-retention';
const BATCH = 5_000;

export async function deleteExpiredWebhookHistory(
  pool: pg.Pool,
  retentionDays: number,
  now = new Date(),
): Promise<{ messages: number; attempts: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  let messages = 0;
  let attempts = 0;
  for (;;) {
    const res = await pool.query(
      `DELETE FROM webhook_messages WHERE id IN (
         SELECT m.id FROM webhook_messages m
          WHERE m.created_at < $1
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id AND d.status IN ('pending', 'retrying'))
          LIMIT $2)`,
      [cutoff, BATCH],
    );
    messages += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < BATCH) break;
  }
  for (;;) {
    // an attempt of a message still being delivered stays (it is part of a delivery in progress)
    const res = await pool.query(
      `DELETE FROM webhook_attempts WHERE id IN (
         SELECT a.id FROM webhook_attempts a
          WHERE a.attempted_at < $1
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = a.message_id AND d.endpoint_id = a.endpoint_id AND d.status IN ('pending', 'retrying'))
          LIMIT $2)`,
      [cutoff, BATCH],
    );
    attempts += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < BATCH) break;
  }
  return { messages, attempts };
}

/** The daily schedule; the worker ensures it at start-up. */
export function ensureWebhookRetentionSchedule(
  client: Client,
  opts: { taskQueue: string; retentionDays: number; scheduleId?: string },
): Promise<ScheduleOutcome> {
  return ensureIntervalSchedule(client, {
    scheduleId: opts.scheduleId ?? WEBHOOK_RETENTION_SCHEDULE_ID,
    everyMs: DAY_MS,
    workflowType: APPLY_RETENTION_WORKFLOW,
    args: ['webhook-history'],
    taskQueue: opts.taskQueue,
    summary: `Delete webhook messages and attempts older than ${opts.retentionDays} days (finished deliveries only)`,
    note: `Webhook history: ${opts.retentionDays}-day retention (WEBHOOK_RETENTION_DAYS)`,
  });
}
