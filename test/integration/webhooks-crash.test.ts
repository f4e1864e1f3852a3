/**
 * Crashes (SIGKILL) of the processes that deliver webhooks:
 * - the worker dies while a delivery waits for its retry (the endpoint workflow's timer, then the
 *   retry activity's own wait): another worker resumes it, and the receiver accepts the event once;
 * - the dispatcher dies while failed deliveries wait for their retry: the worker delivers each once;
 * - a receiver back after an outage gets the waiting messages within the endpoint's concurrency;
 * - the dispatcher dies in the middle of a burst: a new one claims the unacknowledged entries and
 *   the sweeper hands recorded-but-unattempted deliveries to Temporal; every event is delivered,
 *   none is recorded twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { webhookEndpointRetriesId } from '../../domain/webhooks/workflow-contract.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
beforeAll(async () => {
  // room for a loaded CI machine: an attempt that times out (2 s in the shared settings) would use up
  // a short schedule before the receiver, which always accepts, is reached again
  p = await startWebhookPlatform(
    { WEBHOOK_RETRY_SCHEDULE: '4s,4s,4s,4s,4s', WEBHOOK_SWEEP_AFTER: '3s', WEBHOOK_TIMEOUT_MS: '10000' },
    { worker: false, dispatcher: false },
  );
});
afterAll(async () => p?.close());

const exited = (c: { once(e: 'exit', f: () => void): unknown }) => new Promise<void>((r) => c.once('exit', r));

it(
  "a worker killed during the backoff wait: the endpoint's retries resume on another worker and the receiver accepts the event once",
  { timeout: 240_000 },
  async () => {
    const accepted = new Set<string>();
    let accepts = 0;
    // two failures: the first wait is the endpoint workflow's timer, the second the retry activity's own wait
    const receiver = await startReceiver((r, n) => {
      if (n <= 2) return { status: 500 };
      const id = String(r.headers['webhook-id']);
      if (!accepted.has(id)) accepts++;
      accepted.add(id);
      return { status: 204 };
    });
    await p.startDispatcher();
    let worker = p.spawn('worker/index.ts');
    try {
      // the worker polls before the first failure, so the first retry's wait is a timer it started
      await expect
        .poll(
          async () =>
            (
              await p.temporal.workflowService.describeTaskQueue({
                namespace: 'default',
                taskQueue: { name: p.cfg.TEMPORAL_TASK_QUEUE },
              })
            ).pollers?.length ?? 0,
          { timeout: 60_000, interval: 300 },
        )
        .toBeGreaterThan(0);
      const e = await p.workspaceWithEndpoint(receiver.url);
      await p.publish(e.workspace.slug);
      await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);
      const handle = p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id));
      // the endpoint's workflow waits on its timer for the first retry: kill the worker then
      await expect
        .poll(async () => (await handle.fetchHistory()).events!.some((ev) => ev.timerStartedEventAttributes), {
          timeout: 30_000,
          interval: 200,
        })
        .toBe(true);
      worker.kill('SIGKILL');
      await exited(worker);
      expect(receiver.received).toHaveLength(1);
      // a new worker makes the first retry (it fails); kill it again while it waits for the second
      worker = p.spawn('worker/index.ts');
      await expect.poll(() => receiver.received.length, { timeout: 30_000, interval: 100 }).toBe(2);
      worker.kill('SIGKILL');
      await exited(worker);

      await p.startWorker();
      expect(await handle.result()).toMatchObject({ status: 'drained', delivered: 1, failed: 0 });
      expect(accepts).toBe(1);
      expect(receiver.ids().size).toBe(1);
      expect(receiver.received).toHaveLength(3);
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
      await p.stopDispatcher();
      await p.stopWorker();
      await receiver.close();
    }
  },
);

it(
  'a dispatcher killed while failed deliveries wait for their retry: every one delivered once, the restarted dispatcher telling the workflow of those it had not',
  { timeout: 120_000 },
  async () => {
    const EVENTS = 40;
    const failedOnce = new Set<string>();
    const receiver = await startReceiver((r) => {
      const id = String(r.headers['webhook-id']);
      if (failedOnce.has(id)) return { status: 204 };
      failedOnce.add(id);
      return { status: 503 };
    });
    await p.startWorker();
    const dispatcher = p.spawn('services/webhooks/dispatcher.ts');
    try {
      const e = await p.workspaceWithEndpoint(receiver.url);
      await Promise.all(Array.from({ length: EVENTS }, () => p.publish(e.workspace.slug)));
      // every first attempt failed and is recorded, waiting on the endpoint's schedule (4 s)
      await expect
        .poll(
          async () =>
            (
              await p.pool.query(
                `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'retrying' AND next_attempt_at > now()`,
                [e.endpoint.id],
              )
            ).rows[0].n,
          { timeout: 30_000, interval: 50 },
        )
        .toBe(EVENTS);
      // killed right after recording the failures: some endpoint signals may not have gone out; the
      // dispatcher that comes back (as its deployment restarts it) tells the workflow of the overdue ones
      dispatcher.kill('SIGKILL');
      await exited(dispatcher);
      await p.startDispatcher();
      await expect
        .poll(
          async () =>
            (
              await p.pool.query(
                `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status`,
                [e.endpoint.id],
              )
            ).rows,
          { timeout: 60_000, interval: 500 },
        )
        .toEqual([{ status: 'delivered', n: EVENTS }]);
      // each message: one failed first attempt, one delivery
      expect(receiver.received).toHaveLength(2 * EVENTS);
      expect(receiver.ids().size).toBe(EVENTS);
    } finally {
      if (dispatcher.exitCode === null) dispatcher.kill('SIGKILL');
      await p.stopDispatcher();
      await p.stopWorker();
      await receiver.close();
    }
  },
);

it(
  'a receiver back after an outage gets the waiting messages at most WEBHOOK_ENDPOINT_CONCURRENCY at a time, each once',
  { timeout: 180_000 },
  async () => {
    const EVENTS = 30;
    let up = false;
    let inFlight = 0;
    let most = 0;
    const delivered = new Map<string, number>();
    const receiver = await startReceiver(async (r) => {
      if (!up) return { status: 503 };
      inFlight++;
      most = Math.max(most, inFlight);
      // a slow receiver: without the limit the due messages would all be in flight at once
      await new Promise((done) => setTimeout(done, 1_000));
      inFlight--;
      const id = String(r.headers['webhook-id']);
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      return { status: 204 };
    });
    await p.startDispatcher();
    const worker = p.spawn('worker/index.ts', { WEBHOOK_ENDPOINT_CONCURRENCY: '4' });
    try {
      const e = await p.workspaceWithEndpoint(receiver.url);
      await Promise.all(Array.from({ length: EVENTS }, () => p.publish(e.workspace.slug)));
      await expect
        .poll(
          async () =>
            (
              await p.pool.query(
                `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'retrying'`,
                [e.endpoint.id],
              )
            ).rows[0].n,
          { timeout: 30_000, interval: 100 },
        )
        .toBe(EVENTS);
      up = true;
      await expect.poll(() => delivered.size, { timeout: 120_000, interval: 200 }).toBe(EVENTS);
      expect(most).toBeLessThanOrEqual(4);
      expect(most).toBeGreaterThan(1);
      expect([...delivered.values()].every((n) => n === 1)).toBe(true);
    } finally {
      worker.kill('SIGKILL');
      await exited(worker);
      await p.stopDispatcher();
      await receiver.close();
    }
  },
);

it(
  'a dispatcher killed in the middle of a burst: every event delivered, no delivery recorded twice',
  { timeout: 240_000 },
  async () => {
    const EVENTS = 300;
    const receiver = await startReceiver(() => ({ status: 204 }));
    await p.startWorker();
    // four first attempts at a time, so the kill lands while the burst is being delivered
    const dispatcher = p.spawn('services/webhooks/dispatcher.ts', { WEBHOOK_ENDPOINT_CONCURRENCY: '4' });
    try {
      const e = await p.workspaceWithEndpoint(receiver.url);
      const published = new Set<string>();
      for (let i = 0; i < EVENTS; i += 25) {
        const evs = await Promise.all(
          Array.from({ length: Math.min(25, EVENTS - i) }, () => p.publish(e.workspace.slug)),
        );
        for (const ev of evs) published.add(ev.id);
      }
      await expect.poll(() => receiver.received.length, { timeout: 60_000, interval: 20 }).toBeGreaterThan(20);
      dispatcher.kill('SIGKILL');
      await exited(dispatcher);
      const atKill = receiver.received.length;
      expect(atKill).toBeLessThan(EVENTS);

      await p.startDispatcher();
      await expect
        // the swept ones go through their retry workflows: on a busy machine that takes a while
        .poll(
          async () =>
            (
              await p.pool.query(
                `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status`,
                [e.endpoint.id],
              )
            ).rows,
          { timeout: 150_000, interval: 500 },
        )
        .toEqual([{ status: 'delivered', n: EVENTS }]);
      // every event is one message, delivered: the receiver (deduplicating on webhook-id) has all of them
      const messages = await p.pool.query(`SELECT count(*)::int AS n FROM webhook_messages WHERE workspace_id = $1`, [
        e.workspace.id,
      ]);
      expect(messages.rows[0].n).toBe(EVENTS);
      expect(receiver.ids().size).toBe(EVENTS);
    } finally {
      await p.stopDispatcher();
      await receiver.close();
    }
  },
);
