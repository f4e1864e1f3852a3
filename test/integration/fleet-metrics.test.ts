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
