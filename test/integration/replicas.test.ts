/**
 * Two of each: two webhook dispatchers and two workers, each a process of its own, against one
 * Temporal, PostgreSQL and Redis. Every event is delivered, none is accepted twice, and both of
 * each take work (read from each process's own /metrics, as an operator would).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-servers.js';
import { scrape, sampleValue } from '../support/metrics-scrape.js';
import { startReceiver, startWebhookPlatform, type Receiver, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
beforeAll(async () => {
  // the production attempt timeout (the shared harness shortens it): a receiver slower than the
  // timeout is sent again by design (at least once), which a loaded test machine would otherwise
  // provoke; the shared short sweep delay (3 s) stays: a delivery queued in one replica's lane past it
  // is that replica's while its lease runs, not the other's sweeper's
  p = await startWebhookPlatform(
    { WEBHOOK_RETRY_SCHEDULE: '300ms,600ms,1s', WEBHOOK_TIMEOUT_MS: '15000' },
    { worker: false, dispatcher: false },
  );
}, 120_000);
afterAll(async () => {
  await p?.close();
});

/** Starts two processes of `file`, each with its metrics on a port of its own; answers their metrics URLs once served. */
async function twoOf(file: 'services/webhooks/dispatcher.ts' | 'worker/index.ts') {
  const urls: string[] = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    p.spawn(file, { METRICS_PORT: String(port) });
    urls.push(`http://127.0.0.1:${port}/metrics`);
  }
  for (const url of urls)
    await expect
      .poll(
        () =>
          scrape(url).then(
            () => true,
            () => false,
          ),
        { timeout: 60_000, interval: 200 },
      )
      .toBe(true);
  return urls;
}

const ENDPOINTS = 8;
const EVENTS_PER_ENDPOINT = 30;

it(
  'two dispatchers and two workers: every event delivered and accepted once, the first attempts and the retries shared between them',
  { timeout: 300_000 },
  async () => {
    // every 3rd request to an endpoint fails (once per message), so that the workers deliver many
    // retries: eight endpoints' retry workflows, each running its due deliveries as activities
    const accepted = new Map<string, number>();
    const failedOnce = new Set<string>();
    const receivers: Receiver[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      receivers.push(
        await startReceiver((r, n) => {
          const id = String(r.headers['webhook-id']);
          if (n % 3 === 0 && !failedOnce.has(id)) {
            failedOnce.add(id);
            return { status: 503 };
          }
          accepted.set(id, (accepted.get(id) ?? 0) + 1);
          return { status: 204 };
        }),
      );
    }
    const dispatchers = await twoOf('services/webhooks/dispatcher.ts');
    const workers = await twoOf('worker/index.ts');
    // both workers poll the task queue (a worker serves its metrics before its workflows are bundled)
    await expect
      .poll(
        async () =>
          new Set(
            (
              await p.temporal.workflowService.describeTaskQueue({
                namespace: p.cfg.TEMPORAL_NAMESPACE,
                taskQueue: { name: p.cfg.TEMPORAL_TASK_QUEUE },
              })
            ).pollers?.map((poller) => poller.identity),
          ).size,
        { timeout: 90_000, interval: 300 },
      )
      .toBeGreaterThanOrEqual(2);
    try {
      const workspaces: string[] = [];
      const endpointIds: string[] = [];
      for (const r of receivers) {
        const { workspace, endpoint } = await p.workspaceWithEndpoint(r.url);
        workspaces.push(workspace.slug);
        endpointIds.push(endpoint.id);
      }
      // paced in small batches, as events arrive from many ERPs
      for (let i = 0; i < EVENTS_PER_ENDPOINT; i++) {
        await Promise.all(workspaces.map((slug) => p.publish(slug)));
        await new Promise((r) => setTimeout(r, 20));
      }
      const total = ENDPOINTS * EVENTS_PER_ENDPOINT;
      await expect.poll(() => accepted.size, { timeout: 120_000, interval: 250 }).toBe(total);
      expect(failedOnce.size).toBeGreaterThan(0);
      // nothing accepted twice, nothing left undelivered in PostgreSQL
      const twice = [...accepted].filter(([, n]) => n > 1).map(([id]) => id);
      const attemptsOfTwice = await p.pool.query(
        'SELECT message_id, trigger, outcome, status_code, duration_ms, attempted_at FROM webhook_attempts WHERE message_id = ANY($1) ORDER BY attempted_at',
        [twice],
      );
      // (a message accepted twice shows its attempts: which trigger sent it again)
      expect(attemptsOfTwice.rows).toEqual([]);
      const { rows } = await p.pool.query<{ status: string; n: number }>(
        // this test's endpoints only: other test files deliver through the same database
        'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1) GROUP BY status',
        [endpointIds],
      );
      expect(rows).toEqual([{ status: 'delivered', n: total }]);

      // each dispatcher made some of the first attempts, together exactly one per delivery
      const firstAttempts = await Promise.all(
        dispatchers.map(async (url) =>
          sampleValue(await scrape(url), 'plana_webhook_attempts_total', { trigger: 'dispatcher' }),
        ),
      );
      expect(firstAttempts.every((n) => n > 0)).toBe(true);
      expect(firstAttempts.reduce((a, b) => a + b, 0)).toBe(total);
      // the retries that delivered were made by the workers, one per failed message, and both workers ran activities
      const workerMetrics = await Promise.all(workers.map((url) => scrape(url)));
      const retriesOk = workerMetrics.map((m) =>
        sampleValue(m, 'plana_webhook_attempts_total', { trigger: 'retry', outcome: 'ok' }),
      );
      expect(retriesOk.reduce((a, b) => a + b, 0)).toBe(failedOnce.size);
      const activities = workerMetrics.map((m) => sampleValue(m, 'plana_activity_duration_seconds_count'));
      expect(activities.every((n) => n > 0)).toBe(true);
    } finally {
      for (const r of receivers) await r.close();
    }
  },
);
