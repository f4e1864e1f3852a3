/**
 * An endpoint that keeps failing is disabled after `WEBHOOK_DISABLE_AFTER` (5 days; 2 s here), on
 * the real dispatcher, Temporal worker, notifications service and SMTP sink: the retries' attempt
 * disables it, every admin of the workspace (and no member) gets one notice saying which endpoint,
 * since when, for how long and the last error, nothing more is sent to it, and once re-enabled it
 * receives again.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';
import { call } from '../support/workspace-api.js';

let p: WebhookPlatform;
beforeAll(async () => {
  // retries at 0.4, 1.2, 2.4, 3.6 … s after the first failure: the third is past the 2 s
  p = await startWebhookPlatform({
    WEBHOOK_DISABLE_AFTER: '2s',
    WEBHOOK_RETRY_SCHEDULE: '400ms,800ms,1200ms,1200ms,1200ms,1200ms',
    WEBHOOK_RETRY_JITTER: '0',
  });
});
afterAll(async () => p?.close());

const asAdmin = (token: string, slug: string) => ({ token, headers: { 'x-workspace': slug } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('an endpoint failing for longer than WEBHOOK_DISABLE_AFTER is disabled, its admins are told once, and it gets nothing more until re-enabled', async () => {
  let healthy = false;
  const receiver = await startReceiver(() => (healthy ? { status: 204 } : { status: 500, body: 'database down' }));
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    const ws = (await p.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [e.workspace.slug]))
      .rows[0]!;
    const secondAdmin = await p.addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const member = await p.addUser(p.pool, [{ workspaceId: ws.id, role: 'member' }]);
    const get = async () =>
      (await call(p.base, 'GET', `/api/portal/webhooks/${e.endpoint.id}`, asAdmin(e.accessToken, e.workspace.slug)))
        .body;

    await p.publish(e.workspace.slug);
    await expect.poll(get, { timeout: 10_000 }).toMatchObject({ enabled: true, failingSince: expect.any(String) });
    const { failingSince } = await get();
    await expect.poll(get, { timeout: 20_000 }).toMatchObject({ enabled: false });
    const disabled = await get();
    const disabledAfterMs = Date.parse(disabled.updatedAt) - Date.parse(failingSince);
    expect(disabledAfterMs).toBeGreaterThanOrEqual(2_000);
    expect(disabled.disabledReason).toBe('failing for more than 2 s');
    // the retries stop: the attempt that found it failing too long was the last
    const attempts = receiver.received.length;
    expect(attempts).toBeGreaterThanOrEqual(3);

    // every admin gets one notice; a member none
    for (const admin of [e.admin, secondAdmin]) {
      await expect.poll(() => p.mailsTo(admin.email), { timeout: 20_000 }).toHaveLength(1);
      const [mail] = p.mailsTo(admin.email);
      expect(mail!.subject).toBe('[WARNING] Webhook endpoint disabled: failing for too long');
      expect(mail!.text).toContain(receiver.url);
      expect(mail!.text).toContain(e.endpoint.id);
      expect(mail!.text).toContain(`since ${failingSince}`);
      expect(mail!.text).toContain('more than 2 s');
      expect(mail!.text).toContain('Last error: answered 500');
      expect(mail!.text).toContain('enable');
    }
    expect(p.mailsTo(member.email)).toEqual([]);
    // the delivery's workflow marks the message failed in its next activity, after the disabling attempt
    const deliveries = async () =>
      (
        await p.pool.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [
          e.endpoint.id,
        ])
      ).rows;
    await expect.poll(deliveries, { timeout: 20_000 }).toEqual([{ status: 'failed' }]);

    // nothing more goes to it (the dispatcher reads endpoints again after at most a second)
    await sleep(1_200);
    await p.publish(e.workspace.slug);
    await sleep(2_000);
    expect(receiver.received).toHaveLength(attempts);
    // and no second notice
    expect(p.mailsTo(e.admin.email)).toHaveLength(1);

    // re-enabled once it works: its failure clock starts afresh and it receives again
    healthy = true;
    const enabled = await call(p.base, 'PATCH', `/api/portal/webhooks/${e.endpoint.id}`, {
      ...asAdmin(e.accessToken, e.workspace.slug),
      body: { enabled: true },
    });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    await sleep(1_200);
    await p.publish(e.workspace.slug);
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(attempts + 1);
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBeDefined();
  } finally {
    await receiver.close();
  }
});

it('an endpoint that recovers within WEBHOOK_DISABLE_AFTER stays enabled and nobody is told', async () => {
  // fails at 0 and 0.4 s, then answers 204 (at 1.2 s): failing for 0.4 s, far enough below 2 s that a
  // late retry on a loaded machine still fails well within the period
  const receiver = await startReceiver((_r, n) => (n <= 2 ? { status: 500 } : { status: 204 }));
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    await p.publish(e.workspace.slug);
    await expect
      .poll(
        async () =>
          (await p.pool.query('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [e.endpoint.id])).rows,
        { timeout: 20_000 },
      )
      .toEqual([{ status: 'delivered' }]);
    expect(
      (await call(p.base, 'GET', `/api/portal/webhooks/${e.endpoint.id}`, asAdmin(e.accessToken, e.workspace.slug)))
        .body,
    ).toMatchObject({
      enabled: true,
      failingSince: null,
    });
    expect(p.mailsTo(e.admin.email)).toEqual([]);
  } finally {
    await receiver.close();
  }
});
