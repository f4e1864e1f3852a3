/**
 * The worker's fleet gauges (worker/fleet-metrics.ts), read from the run's PostgreSQL at a scrape:
 * what the alert rules of deploy/prometheus/alerts.yml watch.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPool, type Pool } from '../../lib/db.js';
import { metricsRegistry } from '../../lib/metrics.js';
import { watchFleet } from '../../worker/fleet-metrics.js';
import { testConfig } from '../support/env.js';

let pool: Pool;
let unwatch: () => void;
const id = randomUUID().slice(0, 8);
const [ready, unavailable, gone] = [`fleet-ok-${id}`, `fleet-down-${id}`, `fleet-gone-${id}`];

beforeAll(async () => {
  pool = createPool((await testConfig()).DATABASE_URL, 2);
  unwatch = watchFleet(pool);
});

afterAll(async () => {
  unwatch?.();
  await pool?.end();
});

const publish = (name: string, phase: string, readyStatus: string) =>
  pool.query(
    `INSERT INTO tenant_status (name, uid, spec, generation, phase, conditions)
     VALUES ($1, gen_random_uuid(), '{}', 1, $2, $3)`,
    [name, phase, JSON.stringify([{ type: 'Ready', status: readyStatus }])],
  );

it('serves each tenant’s readiness, its newest backup, its newest drill and the rotations still running', async () => {
  await publish(ready, 'Ready', 'True');
  await publish(unavailable, 'Unavailable', 'False');
  await publish(gone, 'Deprovisioned', 'False');
  for (const [at, path] of [
    ['2026-11-27T00:00:00Z', 'old'],
    ['2026-11-28T00:00:00Z', 'new'],
  ])
    await pool.query(
      `INSERT INTO tenant_backups (tenant, tier, kind, path, size_bytes, expires_at, created_at)
       VALUES ($1, 'pro', 'database', $2, 1, now() + interval '30 days', $3)`,
      [ready, `${ready}/${path}.dump`, at],
    );
  for (const [outcome, at] of [
    ['passed', '2026-11-20T00:00:00Z'],
    ['mismatch', '2026-11-27T00:00:00Z'],
  ])
    await pool.query(
      `INSERT INTO tenant_backup_drills (tenant, outcome, started_at, finished_at, duration_ms) VALUES ($1, $2, $3, $3, 1)`,
      [ready, outcome, at],
    );
  await pool.query(
    `INSERT INTO service_key_rotations (workflow_id, caller, target, n, reason, started_at)
     VALUES ($1, 'api', 'events', 1, 'manual', '2026-11-29T01:00:00Z')`,
    [`rotate:api:events:${id}`],
  );

  const text = await metricsRegistry.metrics();
  expect(text).toContain(`plana_tenant_ready{tenant="${ready}",phase="Ready"} 1`);
  expect(text).toContain(`plana_tenant_ready{tenant="${unavailable}",phase="Unavailable"} 0`);
  expect(text).not.toContain(`tenant="${gone}"`);
  expect(text).toContain(
    `plana_tenant_last_backup_timestamp_seconds{tenant="${ready}"} ${Date.parse('2026-11-28T00:00:00Z') / 1000}`,
  );
  expect(text).toContain(`plana_backup_drill_failing{tenant="${ready}",outcome="mismatch"} 1`);
  expect(text).toContain(
    `plana_service_key_rotation_started_timestamp_seconds{caller="api",target="events",workflow_id="rotate:api:events:${id}"} ${Date.parse('2026-11-29T01:00:00Z') / 1000}`,
  );
});

it('serves each webhook endpoint’s backlog and the endpoints the platform disabled, not one its owner turned off', async () => {
  const workspace = (
    await pool.query<{ id: string }>(`INSERT INTO workspaces (slug, name) VALUES ($1, 'Fleet') RETURNING id`, [
      `fleet-${id}`,
    ])
  ).rows[0]!.id;
  const endpoint = async (enabled: boolean, reason: string | null) =>
    (
      await pool.query<{ id: string }>(
        `INSERT INTO webhook_endpoints (workspace_id, url, enabled, disabled_reason, secret_sealed, updated_at)
         VALUES ($1, 'https://receiver.test/hook', $2, $3, 'sealed', '2026-11-29T02:00:00Z') RETURNING id`,
        [workspace, enabled, reason],
      )
    ).rows[0]!.id;
  const [slow, gone, turnedOff] = [
    await endpoint(true, null),
    await endpoint(false, 'the receiver answered 410 Gone'),
    await endpoint(false, null),
  ];
  for (const [n, status] of [
    [1, 'pending'],
    [2, 'retrying'],
    [3, 'delivered'],
  ] as const) {
    const message = `msg_fleet_${id}_${n}`;
    await pool.query(
      `INSERT INTO webhook_messages (id, workspace_id, event_type, payload) VALUES ($1, $2, 'x', '{}')`,
      [message, workspace],
    );
    await pool.query(
      `INSERT INTO webhook_deliveries (endpoint_id, message_id, workspace_id, status) VALUES ($1, $2, $3, $4)`,
      [slow, message, workspace, status],
    );
  }

  const text = await metricsRegistry.metrics();
  expect(text).toContain(`plana_webhook_endpoint_backlog{endpoint="${slow}",workspace="fleet-${id}"} 2`);
  expect(text).toContain(
    `plana_webhook_endpoint_disabled_timestamp_seconds{endpoint="${gone}",workspace="fleet-${id}",reason="the receiver answered 410 Gone"} ${Date.parse('2026-11-29T02:00:00Z') / 1000}`,
  );
  expect(text).not.toContain(`endpoint="${turnedOff}"`);
});
