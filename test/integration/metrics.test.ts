/**
 * Prometheus metrics as an operator reads them: the account API, the webhook dispatcher and the
 * worker run as processes of their own with METRICS_PORT (and the worker TEMPORAL_METRICS_PORT);
 * after real requests and deliveries, GET /metrics on each shows what was done.
 */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-servers.js';
import { scrape, scrapeValue, sampleValue } from '../support/metrics-scrape.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
beforeAll(async () => {
  p = await startWebhookPlatform({}, { worker: false, dispatcher: false });
}, 120_000);
afterAll(async () => {
  await p?.close();
});

/** Starts `file` as a process with its metrics on a free port; answers its metrics URL once it serves them. */
async function spawnWithMetrics(
  file: 'api/server.ts' | 'services/webhooks/dispatcher.ts' | 'worker/index.ts',
  extra: Record<string, string> = {},
): Promise<{ child: ChildProcess; metrics: string }> {
  const port = await freePort();
  const child = p.spawn(file, { METRICS_PORT: String(port), ...extra });
  const metrics = `http://127.0.0.1:${port}/metrics`;
  await expect
    .poll(
      () =>
        scrape(metrics).then(
          () => true,
          () => false,
        ),
      { timeout: 60_000, interval: 200 },
    )
    .toBe(true);
  return { child, metrics };
}

it(
  "the account API counts and times each request by its route template and status (never the raw URL's ids)",
  { timeout: 120_000 },
  async () => {
    const apiPort = await freePort();
    const base = `http://127.0.0.1:${apiPort}`;
    const { child, metrics } = await spawnWithMetrics('api/server.ts', {
      API_PORT: String(apiPort),
      API_PUBLIC_URL: base,
    });
    try {
      await expect
        .poll(
          () =>
            fetch(`${base}/healthz`).then(
              (r) => r.status,
              () => 0,
            ),
          { timeout: 30_000 },
        )
        .toBe(200);
      const health = { service: 'account-api', method: 'GET', route: '/healthz', status: '200' };
      const endpoint = { service: 'account-api', method: 'GET', route: '/api/portal/webhooks/:id', status: '401' };
      const before = await scrape(metrics);
      const id = randomUUID();
      for (let i = 0; i < 5; i++) expect((await fetch(`${base}/healthz`)).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await fetch(`${base}/api/portal/webhooks/${id}`)).status).toBe(401);

      const after = await scrape(metrics);
      const delta = (name: string, labels: Record<string, string>) =>
        sampleValue(after, name, labels) - sampleValue(before, name, labels);
      expect(delta('plana_http_requests_total', health)).toBe(5);
      expect(delta('plana_http_request_duration_seconds_count', health)).toBe(5);
      expect(delta('plana_http_requests_total', endpoint)).toBe(3);
      // every request took less than 10 s: all in the histogram's 10 s bucket
      expect(delta('plana_http_request_duration_seconds_bucket', { ...endpoint, le: '10' })).toBe(3);
      expect(after).not.toContain(id);
      // the process's own figures come with it
      expect(sampleValue(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
    }
  },
);

it(
  'webhook attempts by outcome: the dispatcher counts a delivered and a failed first attempt, the worker the retry that delivered; queue depths and the SDK metrics are served',
  { timeout: 180_000 },
  async () => {
    const ok = await startReceiver();
    const failingFirst = await startReceiver((_r, n) => ({ status: n === 1 ? 500 : 204 }));
    const temporalPort = await freePort();
    const dispatcher = await spawnWithMetrics('services/webhooks/dispatcher.ts');
    const worker = await spawnWithMetrics('worker/index.ts', { TEMPORAL_METRICS_PORT: String(temporalPort) });
    try {
      const a = await p.workspaceWithEndpoint(ok.url);
      const b = await p.workspaceWithEndpoint(failingFirst.url);
      await p.publish(a.workspace.slug);
      await p.publish(b.workspace.slug);
      await expect.poll(() => failingFirst.received.length, { timeout: 60_000 }).toBe(2);
      expect(ok.received).toHaveLength(1);

      const attempts = (url: string, outcome: string, trigger: string) =>
        scrapeValue(url, 'plana_webhook_attempts_total', { outcome, trigger });
      await expect.poll(() => attempts(dispatcher.metrics, 'ok', 'dispatcher'), { timeout: 10_000 }).toBe(1);
      expect(await attempts(dispatcher.metrics, 'http-status', 'dispatcher')).toBe(1);
      await expect.poll(() => attempts(worker.metrics, 'ok', 'retry'), { timeout: 10_000 }).toBe(1);
      expect(await attempts(worker.metrics, 'http-status', 'retry')).toBe(0);

      // the delivery queue: both entries read and acknowledged, none waiting
      const queue = { stream: p.cfg.EVENTS_STREAM, group: 'webhooks' };
      const dispatcherText = await scrape(dispatcher.metrics);
      expect(sampleValue(dispatcherText, 'plana_events_stream_length', { stream: p.cfg.EVENTS_STREAM })).toBe(2);
      expect(sampleValue(dispatcherText, 'plana_events_group_pending', queue)).toBe(0);
      expect(sampleValue(dispatcherText, 'plana_events_group_lag', queue)).toBe(0);

      // the worker's activities (the retry's delivery among them), and the Temporal SDK's own worker metrics
      expect(
        await scrapeValue(worker.metrics, 'plana_activity_duration_seconds_count', { outcome: 'completed' }),
      ).toBeGreaterThan(0);
      const sdk = await scrape(`http://127.0.0.1:${temporalPort}/metrics`);
      expect(
        sampleValue(sdk, 'temporal_worker_task_slots_available', { task_queue: p.cfg.TEMPORAL_TASK_QUEUE }),
      ).toBeGreaterThan(0);
    } finally {
      dispatcher.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      await ok.close();
      await failingFirst.close();
    }
  },
);
