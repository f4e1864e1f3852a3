/**
 * The fleet's state as Prometheus gauges, read from PostgreSQL at each scrape of the worker's
 * `/metrics` (what the platform keeps there survives any restart, so the gauges do too): each
 * tenant's readiness and phase as its workflow published them, its newest backup, its newest backup
 * drill's outcome, the service-key rotations still running, each webhook endpoint's backlog and the
 * endpoints the platform disabled. The alert rules that watch them are
 * in deploy/prometheus/alerts.yml; docs/operators.md ("Alerts") says what to do about each.
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

/** Rows of `sql` when a pool is watched; none otherwise. */
async function rows<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
  return platformPool ? (await platformPool.query<T>(sql)).rows : [];
}

const seconds = (at: Date) => at.getTime() / 1000;

new client.Gauge({
  name: 'plana_tenant_ready',
  help: 'Whether a tenant is Ready (1) or not (0), with its phase, as its lifecycle workflow published it (deprovisioned tenants left out)',
  labelNames: ['tenant', 'phase'] as const,
  async collect() {
    this.reset();
    const tenants = await rows<{ name: string; phase: string; ready: boolean }>(
      `SELECT name, phase, coalesce(conditions @> '[{"type":"Ready","status":"True"}]', false) AS ready
         FROM tenant_status WHERE phase <> 'Deprovisioned'`,
    );
    for (const t of tenants) this.set({ tenant: t.name, phase: t.phase }, t.ready ? 1 : 0);
  },
});

new client.Gauge({
  name: 'plana_tenant_last_backup_timestamp_seconds',
  help: 'When the newest stored database backup of a tenant was taken (tenants Ready or Unavailable)',
  labelNames: ['tenant'] as const,
  async collect() {
    this.reset();
    const backups = await rows<{ tenant: string; at: Date }>(
      `SELECT s.name AS tenant, max(b.created_at) AS at
         FROM tenant_status s JOIN tenant_backups b ON b.tenant = s.name AND b.kind = 'database'
        WHERE s.phase IN ('Ready', 'Unavailable') GROUP BY s.name`,
    );
    for (const b of backups) this.set({ tenant: b.tenant }, seconds(b.at));
  },
});

new client.Gauge({
  name: 'plana_backup_drill_failing',
  help: "Whether a tenant's newest backup drill did not pass (1: mismatch or failed; 0: passed)",
  labelNames: ['tenant', 'outcome'] as const,
  async collect() {
    this.reset();
    const drills = await rows<{ tenant: string; outcome: string }>(
      `SELECT DISTINCT ON (tenant) tenant, outcome FROM tenant_backup_drills ORDER BY tenant, finished_at DESC`,
    );
    for (const d of drills) this.set({ tenant: d.tenant, outcome: d.outcome }, d.outcome === 'passed' ? 0 : 1);
  },
});

new client.Gauge({
  name: 'plana_service_key_rotation_started_timestamp_seconds',
  help: 'When each service-key rotation still running started (it waits on its consumer to switch keys)',
  labelNames: ['caller', 'target', 'workflow_id'] as const,
  async collect() {
    this.reset();
    const running = await rows<{ workflow_id: string; caller: string; target: string; started_at: Date }>(
      `SELECT workflow_id, caller, target, started_at FROM service_key_rotations WHERE finished_at IS NULL`,
    );
    for (const r of running)
      this.set({ caller: r.caller, target: r.target, workflow_id: r.workflow_id }, seconds(r.started_at));
  },
});

new client.Gauge({
  name: 'plana_webhook_endpoint_backlog',
  help: 'Deliveries of a webhook endpoint not delivered yet (pending or retrying), for endpoints with any',
  labelNames: ['endpoint', 'workspace'] as const,
  async collect() {
    this.reset();
    const backlog = await rows<{ endpoint: string; workspace: string; n: number }>(
      `SELECT d.endpoint_id AS endpoint, w.slug AS workspace, count(*)::int AS n
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN workspaces w ON w.id = e.workspace_id
        WHERE d.status IN ('pending', 'retrying') GROUP BY d.endpoint_id, w.slug`,
    );
    for (const b of backlog) this.set({ endpoint: b.endpoint, workspace: b.workspace }, b.n);
  },
});

new client.Gauge({
  name: 'plana_webhook_endpoint_disabled_timestamp_seconds',
  help: 'When the platform disabled each disabled webhook endpoint (410 Gone, or failing for too long), with the reason',
  labelNames: ['endpoint', 'workspace', 'reason'] as const,
  async collect() {
    this.reset();
    const disabled = await rows<{ endpoint: string; workspace: string; reason: string; at: Date }>(
      `SELECT e.id AS endpoint, w.slug AS workspace, e.disabled_reason AS reason, e.updated_at AS at
         FROM webhook_endpoints e JOIN workspaces w ON w.id = e.workspace_id
        WHERE NOT e.enabled AND e.disabled_reason IS NOT NULL`,
    );
    for (const d of disabled)
      this.set({ endpoint: d.endpoint, workspace: d.workspace, reason: d.reason }, seconds(d.at));
  },
});
