/**
 * The fleet's state as Prometheus gauges, read from PostgreSQL at each scrape of the worker's
 * `/metrics` (what the platform keeps there survives any restart, so the gauges do too): each
 * tenant's readiness and phase as its workflow published them, its newest backup, its newest backup
 * drill's outcome, the service-key rotations still running, each webhook endpoint's backlog, the
 * endpoints the platform disabled, and how far the execution log's mirror to the log store is
 * behind. The alert rules that watch them are in deploy/prometheus/alerts.yml; docs/operators.md
 * ("Alerts") says what to do about each.
 */
import type pg from 'pg';
import client from 'prom-client';

let platformPool: pg.Pool | undefined;

/** Serves the gauges from this pool until the returned function is called. */
export function watchFleet(pool: pg.Pool): () => void {
  platformPool = pool;
  return () => {
    if (platformPool === pool) platformPool = undefined;
  };
}

/**
 * A gauge read with one query at each scrape: `sql` answers one row per series, a column per label
 * and the series' number as `value` (none while no pool is watched).
 */
function sqlGauge<L extends string>(g: { name: string; help: string; labelNames: readonly L[]; sql: string }): void {
  new client.Gauge({
    name: g.name,
    help: g.help,
    labelNames: g.labelNames,
    async collect() {
      this.reset();
      if (!platformPool) return;
      const { rows } = await platformPool.query<{ value: number } & Record<string, string | number>>(g.sql);
      for (const { value, ...labels } of rows) this.set(labels as Partial<Record<L, string>>, value);
    },
  });
}

sqlGauge({
  name: 'plana_tenant_ready',
  help: 'Whether a tenant is Ready (1) or not (0), with its phase, as its lifecycle workflow published it (deprovisioned tenants left out)',
  labelNames: ['tenant', 'phase'],
  sql: `SELECT name AS tenant, phase,
               CASE WHEN conditions @> '[{"type":"Ready","status":"True"}]' THEN 1 ELSE 0 END AS value
          FROM tenant_status WHERE phase <> 'Deprovisioned'`,
});

sqlGauge({
  name: 'plana_tenant_last_backup_timestamp_seconds',
  help: 'When the newest stored database backup of a tenant was taken (tenants Ready or Unavailable)',
  labelNames: ['tenant'],
  sql: `SELECT s.name AS tenant, extract(epoch FROM max(b.created_at))::float8 AS value
          FROM tenant_status s JOIN tenant_backups b ON b.tenant = s.name AND b.kind = 'database'
         WHERE s.phase IN ('Ready', 'Unavailable') GROUP BY s.name`,
});

sqlGauge({
  name: 'plana_backup_drill_failing',
  help: "Whether a tenant's newest backup drill did not pass (1: mismatch or failed; 0: passed)",
  labelNames: ['tenant', 'outcome'],
  sql: `SELECT DISTINCT ON (tenant) tenant, outcome, CASE WHEN outcome = 'passed' THEN 0 ELSE 1 END AS value
          FROM tenant_backup_drills ORDER BY tenant, finished_at DESC`,
});

sqlGauge({
  name: 'plana_service_key_rotation_started_timestamp_seconds',
  help: 'When each service-key rotation still running started (it waits on its consumer to switch keys)',
  labelNames: ['caller', 'target', 'workflow_id'],
  sql: `SELECT caller, target, workflow_id, extract(epoch FROM started_at)::float8 AS value
          FROM service_key_rotations WHERE finished_at IS NULL`,
});

sqlGauge({
  name: 'plana_webhook_endpoint_backlog',
  help: 'Deliveries of a webhook endpoint not delivered yet (pending or retrying), for endpoints with any',
  labelNames: ['endpoint', 'workspace'],
  sql: `SELECT d.endpoint_id::text AS endpoint, w.slug AS workspace, count(*)::int AS value
          FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          JOIN workspaces w ON w.id = e.workspace_id
         WHERE d.status IN ('pending', 'retrying') GROUP BY d.endpoint_id, w.slug`,
});

sqlGauge({
  name: 'plana_webhook_endpoint_disabled_timestamp_seconds',
  help: 'When the platform disabled each disabled webhook endpoint (410 Gone, or failing for too long), with the reason',
  labelNames: ['endpoint', 'workspace', 'reason'],
  sql: `SELECT e.id::text AS endpoint, w.slug AS workspace, e.disabled_reason AS reason,
               extract(epoch FROM e.updated_at)::float8 AS value
          FROM webhook_endpoints e JOIN workspaces w ON w.id = e.workspace_id
         WHERE NOT e.enabled AND e.disabled_reason IS NOT NULL`,
});

sqlGauge({
  name: 'plana_execution_log_mirror_lag_seconds',
  help: 'How old the oldest execution-log row not yet in the log store is (0: the mirror has caught up)',
  labelNames: [],
  sql: `SELECT coalesce(extract(epoch FROM now() - (
                 SELECT e.occurred_at FROM execution_log e, execution_log_mirror_cursor c
                  WHERE (e.xid, e.id) > (c.xid, c.id) ORDER BY e.xid, e.id LIMIT 1)), 0)::float8 AS value`,
});
