/**
 * `npm run dev`'s Prometheus (scripts/local-prometheus.ts): it loads every rule of
 * deploy/prometheus/alerts.yml, scrapes what a platform process serves, and an alert fires from the
 * platform's own metric.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startMetricsServer, tenantControllerReconcileErrors, type MetricsServer } from '../../lib/metrics.js';
import { ALERT_RULES, startPrometheus, type PrometheusServer } from '../../scripts/local-prometheus.js';
import { freePort, throwAwayDir } from '../../scripts/local-servers.js';

let metrics: MetricsServer;
let prometheus: PrometheusServer;

beforeAll(async () => {
  metrics = await startMetricsServer({ port: 0, host: '127.0.0.1' });
  prometheus = await startPrometheus({
    dir: path.join(throwAwayDir('plana-prometheus-'), 'prometheus'),
    port: await freePort(),
    targets: [new URL(metrics.url).host],
    scrapeInterval: '1s',
  });
});

afterAll(async () => {
  await prometheus?.stop();
  await metrics?.close();
});

async function api<T>(pathname: string): Promise<T> {
  const res = await fetch(`${prometheus.url}${pathname}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: T }).data;
}

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Prometheus: ${what} within ${timeoutMs} ms`);
    await sleep(250);
  }
}

describe("npm run dev's Prometheus", () => {
  it('loads every rule of deploy/prometheus/alerts.yml', async () => {
    const file = parse(readFileSync(ALERT_RULES, 'utf8')) as {
      groups: { name: string; rules: ({ alert: string } | { record: string })[] }[];
    };
    const loaded = await api<{ groups: { name: string; rules: { name: string }[] }[] }>('/api/v1/rules');
    // Prometheus lists the groups by name; each group's rules in the file's order
    const byGroup = (groups: { name: string; rules: string[] }[]) =>
      Object.fromEntries(groups.map((g) => [g.name, g.rules]));
    expect(byGroup(loaded.groups.map((g) => ({ name: g.name, rules: g.rules.map((r) => r.name) })))).toEqual(
      byGroup(
        file.groups.map((g) => ({ name: g.name, rules: g.rules.map((r) => ('alert' in r ? r.alert : r.record)) })),
      ),
    );
  });

  it('scrapes the platform process and fires an alert from its metric', async () => {
    await until('the target up', async () => {
      const { activeTargets } = await api<{ activeTargets: { health: string }[] }>('/api/v1/targets');
      return activeTargets[0]?.health === 'up' ? true : undefined;
    });
    // reconciles failing after a first scrape saw none: the increase over 15 minutes passes 5
    tenantControllerReconcileErrors.inc(6);
    const alert = await until('TenantClientReconcileErrors firing', async () => {
      const { alerts } = await api<{ alerts: { labels: { alertname: string }; state: string }[] }>('/api/v1/alerts');
      return alerts.find((a) => a.labels.alertname === 'TenantClientReconcileErrors' && a.state === 'firing');
    });
    expect(alert.state).toBe('firing');
  });
});
