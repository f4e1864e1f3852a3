/**
 * The stale-delivery sweeper with two dispatchers: a delivery waiting in one dispatcher's lane (its
 * endpoint is slow) longer than WEBHOOK_SWEEP_AFTER belongs to that dispatcher while it lives (its
 * lease in PostgreSQL), so the other dispatcher's sweeper leaves it alone and the receiver gets it
 * once; once its dispatcher is gone (no lease), what it left pending is swept and delivered.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDispatcher, type Dispatcher } from '../../services/webhooks/dispatcher.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
beforeAll(async () => {
  // one attempt at a time per endpoint and a short sweep delay: a burst of a slow endpoint waits in
  // its dispatcher's lane several times WEBHOOK_SWEEP_AFTER
  p = await startWebhookPlatform(
    { WEBHOOK_ENDPOINT_CONCURRENCY: '1', WEBHOOK_SWEEP_AFTER: '1s', WEBHOOK_TIMEOUT_MS: '10000' },
    { dispatcher: false },
  );
}, 120_000);
afterAll(async () => p?.close());

const EVENTS = 12;

it(
  "two dispatchers: deliveries queued in one dispatcher's lane past the sweep delay are sent once, not again by the other's sweeper",
  { timeout: 120_000 },
  async () => {
    // a slow receiver: 300 ms per delivery, so the burst takes ~3.6 s in its lane of one
    const receiver = await startReceiver(() => new Promise((r) => setTimeout(() => r({ status: 204 }), 300)));
    const dispatchers: Dispatcher[] = [
      await startDispatcher(p.cfg, { consumer: 'sweeper-replica-a' }),
      await startDispatcher(p.cfg, { consumer: 'sweeper-replica-b' }),
    ];
    try {
      const { workspace, endpoint } = await p.workspaceWithEndpoint(receiver.url);
      await Promise.all(Array.from({ length: EVENTS }, () => p.publish(workspace.slug)));
      await expect.poll(() => receiver.ids().size, { timeout: 60_000, interval: 200 }).toBe(EVENTS);
      // the sweepers run every 250 ms: give them several rounds after the last delivery
      await new Promise((r) => setTimeout(r, 3_000));
      const perId = new Map<string, number>();
      for (const r of receiver.received) {
        const id = String(r.headers['webhook-id']);
        perId.set(id, (perId.get(id) ?? 0) + 1);
      }
      expect([...perId.values()].filter((n) => n > 1)).toEqual([]);
      expect(receiver.received).toHaveLength(EVENTS);
      const { rows } = await p.pool.query<{ status: string; attempts: number }>(
        'SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpoint.id],
      );
      expect(rows).toHaveLength(EVENTS);
      expect(rows.every((r) => r.status === 'delivered' && r.attempts === 1)).toBe(true);
    } finally {
      for (const d of dispatchers) await d.close();
      await receiver.close();
    }
  },
);
