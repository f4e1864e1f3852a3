/**
 * Webhook history retention as the platform runs it: the `webhook-retention` Temporal Schedule
 * starts `applyRetention('webhook-history')` on the real dev server, a real worker deletes from the real
 * PostgreSQL the messages (with their deliveries) and attempts past WEBHOOK_RETENTION_DAYS whose
 * deliveries have ended, and keeps a delivery still retrying and everything recent; the portal's
 * attempts list then shows only what is kept.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebhookRetentionSchedule } from '../../domain/webhooks/retention.js';
import { call } from '../support/workspace-api.js';
import { runScheduleNow } from '../support/schedules.js';
import { startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
beforeAll(async () => {
  p = await startWebhookPlatform({ WEBHOOK_RETENTION_DAYS: '30' }, { dispatcher: false });
});
afterAll(async () => p?.close());

describe('the webhook-retention schedule', () => {
  it('deletes messages and attempts past the retention whose deliveries ended; keeps one still retrying and the recent ones', async () => {
    const e = await p.workspaceWithEndpoint('http://127.0.0.1:9/never-called');
    const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000);
    const message = async (label: string, age: number, status: 'delivered' | 'failed' | 'retrying') => {
      const id = `msg_${label}_${randomUUID().slice(0, 8)}`;
      await p.pool.query(
        `INSERT INTO webhook_messages (id, workspace_id, event_type, payload, created_at) VALUES ($1, $2, 'invoice.posted', '{}', $3)`,
        [id, e.workspace.id, daysAgo(age)],
      );
      await p.pool.query(
        `INSERT INTO webhook_deliveries (endpoint_id, message_id, workspace_id, status, attempts, created_at) VALUES ($1, $2, $3, $4, 1, $5)`,
        [e.endpoint.id, id, e.workspace.id, status, daysAgo(age)],
      );
      await p.pool.query(
        `INSERT INTO webhook_attempts (endpoint_id, message_id, attempted_at, trigger, status_code, duration_ms, outcome) VALUES ($1, $2, $3, 'dispatcher', 500, 12, 'http-status')`,
        [e.endpoint.id, id, daysAgo(age)],
      );
      return id;
    };
    const oldDelivered = await message('old-delivered', 40, 'delivered');
    const oldFailed = await message('old-failed', 35, 'failed');
    const oldRetrying = await message('old-retrying', 40, 'retrying');
    const recent = await message('recent', 10, 'failed');

    const scheduleId = `webhook-retention-${randomUUID().slice(0, 8)}`;
    expect(
      await ensureWebhookRetentionSchedule(p.temporal, {
        taskQueue: p.cfg.TEMPORAL_TASK_QUEUE,
        retentionDays: 30,
        scheduleId,
      }),
    ).toBe('created');
    expect(
      await ensureWebhookRetentionSchedule(p.temporal, {
        taskQueue: p.cfg.TEMPORAL_TASK_QUEUE,
        retentionDays: 30,
        scheduleId,
      }),
    ).toBe('exists');
    const schedule = p.temporal.schedule.getHandle(scheduleId);
    try {
      const result = await runScheduleNow<{ retentionDays: number; messages: number }>(p.temporal, scheduleId);
      expect(result.retentionDays).toBe(30);
      // (other test files' rows may go too: at least ours)
      expect(result.messages).toBeGreaterThanOrEqual(2);
    } finally {
      await schedule.delete();
    }

    const left = async (
      table: 'webhook_messages' | 'webhook_deliveries' | 'webhook_attempts',
      column: 'id' | 'message_id',
    ) =>
      (
        await p.pool.query<{ id: string }>(`SELECT ${column} AS id FROM ${table} WHERE ${column} = ANY($1)`, [
          [oldDelivered, oldFailed, oldRetrying, recent],
        ])
      ).rows
        .map((r) => r.id)
        .sort();
    const kept = [oldRetrying, recent].sort();
    expect(await left('webhook_messages', 'id')).toEqual(kept);
    expect(await left('webhook_deliveries', 'message_id')).toEqual(kept);
    expect(await left('webhook_attempts', 'message_id')).toEqual(kept);

    // what the workspace sees of the endpoint's attempts: only the kept ones
    const attempts = await call(p.cfg.API_PUBLIC_URL, 'GET', `/api/portal/webhooks/${e.endpoint.id}/attempts`, {
      token: e.accessToken,
      headers: { 'x-workspace': e.workspace.slug },
    });
    expect(attempts.status).toBe(200);
    const ids = (attempts.body.attempts as { messageId: string }[]).map((a) => a.messageId).sort();
    expect(ids).toEqual(kept);
  });
});
