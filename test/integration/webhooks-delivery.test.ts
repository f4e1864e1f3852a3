/**
 * Event → webhook, for real: an event published to the events service reaches the dispatcher
 * (consumer group `webhooks`), which signs it (Standard Webhooks) and posts it to the endpoints
 * of the event's workspace; receivers verify it with the public `standardwebhooks` library.
 * Every attempt is recorded and readable through the API. Private addresses are refused at
 * connect time (names resolved by a DNS stand-in), 3xx is never followed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startDnsStandIn, type DnsStandIn } from '../../sandbox/dns/server.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';
import { call } from '../support/workspace-api.js';
import { recordAttempts } from '../../domain/webhooks/deliveries.js';

let p: WebhookPlatform;
let dns: DnsStandIn;
beforeAll(async () => {
  dns = await startDnsStandIn({ 'allowed.test': '127.0.0.1', 'internal.test': '127.0.0.2' });
  // long retry waits: this file is about first attempts
  p = await startWebhookPlatform({ WEBHOOK_DNS_SERVERS: `127.0.0.1:${dns.port}`, WEBHOOK_RETRY_SCHEDULE: '1h' });
});
afterAll(async () => {
  await p?.close();
  await dns?.close();
});

const asAdmin = (token: string, slug: string) => ({ token, headers: { 'x-workspace': slug } });
/** An endpoint's recorded attempts, as the portal lists them to its workspace's admin. */
const attemptsOf = async (e: { workspace: { slug: string }; accessToken: string; endpoint: { id: string } }) =>
  (
    await call(
      p.base,
      'GET',
      `/api/portal/webhooks/${e.endpoint.id}/attempts`,
      asAdmin(e.accessToken, e.workspace.slug),
    )
  ).body.attempts;

it('delivers a signed event that standardwebhooks verifies; only matching endpoints get it; the attempt is recorded', async () => {
  const receiver = await startReceiver();
  const other = await startReceiver();
  try {
    const { workspace, accessToken, endpoint, secret } = await p.workspaceWithEndpoint(receiver.url, {
      eventTypes: ['invoice.posted'],
    });
    const res = await call(p.base, 'POST', '/api/portal/webhooks', {
      ...asAdmin(accessToken, workspace.slug),
      body: { url: other.url, eventTypes: ['payment.received'] },
    });
    expect(res.status).toBe(201);

    const ev = await p.publish(workspace.slug, 'invoice.posted', { invoice: 'INV/2026/0042', amount: 99.5 });
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);
    const got = receiver.received[0]!;
    const payload = new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as {
      type: string;
      data: unknown;
      timestamp: string;
    };
    expect(payload).toEqual({
      type: 'invoice.posted',
      timestamp: ev.time,
      data: { invoice: 'INV/2026/0042', amount: 99.5 },
    });
    expect(got.headers['webhook-id']).toMatch(/^msg_/);
    expect(got.headers['user-agent']).toBe(p.cfg.WEBHOOK_USER_AGENT);
    // a wrong secret does not verify
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        got.body,
        got.headers as Record<string, string>,
      ),
    ).toThrow();

    await expect
      .poll(() => attemptsOf({ workspace, accessToken, endpoint }), { timeout: 10_000 })
      .toMatchObject([{ messageId: got.headers['webhook-id'], statusCode: 204, outcome: 'ok', trigger: 'dispatcher' }]);
    expect(other.received).toHaveLength(0);
  } finally {
    await receiver.close();
    await other.close();
  }
});

it('during a secret rotation each delivery carries two signatures: the old and the new secret both verify', async () => {
  const receiver = await startReceiver();
  try {
    const { workspace, accessToken, endpoint, secret: oldSecret } = await p.workspaceWithEndpoint(receiver.url);
    const rotated = await call(
      p.base,
      'POST',
      `/api/portal/webhooks/${endpoint.id}/secret/rotate`,
      asAdmin(accessToken, workspace.slug),
    );
    const newSecret = rotated.body.secret as string;
    // the dispatcher reads endpoints again within a second: publish until a delivery is signed twice
    await expect
      .poll(
        async () => {
          const before = receiver.received.length;
          await p.publish(workspace.slug);
          await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(before + 1);
          return String(receiver.received.at(-1)!.headers['webhook-signature']).split(' ').length;
        },
        { timeout: 20_000, interval: 300 },
      )
      .toBe(2);
    const got = receiver.received.at(-1)!;
    expect(() => new Webhook(newSecret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
  } finally {
    await receiver.close();
  }
});

it('refuses a name that resolves to a private address when connecting, while the allow-listed loopback receiver is reached', async () => {
  // listens on every address: were the socket allowed to connect to 127.0.0.2, the request would arrive
  const receiver = await startReceiver(undefined, '0.0.0.0');
  try {
    const ok = await p.workspaceWithEndpoint(`http://allowed.test:${receiver.port}/ok`);
    // saved: a name is not resolved when saved (it could change anyway); the connect is what counts
    const bad = await p.workspaceWithEndpoint(`http://internal.test:${receiver.port}/bad`);
    await p.publish(bad.workspace.slug);
    await p.publish(ok.workspace.slug);
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);
    expect(receiver.received[0]!.headers.host).toBe(`allowed.test:${receiver.port}`);
    await expect
      .poll(() => attemptsOf(bad), { timeout: 10_000 })
      .toMatchObject([
        {
          outcome: 'forbidden-address',
          statusCode: null,
          error: expect.stringContaining('127.0.0.2 is a loopback address'),
        },
      ]);
    expect(receiver.received.every((r) => r.headers.host !== `internal.test:${receiver.port}`)).toBe(true);
  } finally {
    await receiver.close();
  }
});

it('does not follow a redirect: a 3xx is a failed attempt and the Location is never requested', async () => {
  const target = await startReceiver();
  const redirecting = await startReceiver(() => ({ status: 302, headers: { location: target.url } }));
  try {
    const { workspace, accessToken, endpoint } = await p.workspaceWithEndpoint(redirecting.url);
    await p.publish(workspace.slug);
    await expect
      .poll(() => attemptsOf({ workspace, accessToken, endpoint }), { timeout: 15_000 })
      .toMatchObject([{ outcome: 'redirect', statusCode: 302, responseHeaders: { location: target.url } }]);
    expect(redirecting.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
  } finally {
    await target.close();
    await redirecting.close();
  }
});

it('the test endpoint sends a signed sample event and answers the attempt', async () => {
  const receiver = await startReceiver();
  try {
    const { workspace, accessToken, endpoint, secret } = await p.workspaceWithEndpoint(receiver.url);
    const res = await call(
      p.base,
      'POST',
      `/api/portal/webhooks/${endpoint.id}/test`,
      asAdmin(accessToken, workspace.slug),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'ok', statusCode: 204, trigger: 'test' });
    const got = receiver.received[0]!;
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({
      type: 'webhook.test',
    });
  } finally {
    await receiver.close();
  }
});

it('pages through the attempts with the before cursor: each attempt once, even those recorded at the same instant', async () => {
  const receiver = await startReceiver();
  try {
    const { workspace, accessToken, endpoint } = await p.workspaceWithEndpoint(receiver.url);
    // a dispatcher batch can record several attempts with the same time
    const at = new Date();
    const result = {
      outcome: 'ok' as const,
      statusCode: 204,
      durationMs: 3,
      error: null,
      headers: {},
      excerpt: '',
      retryAfterMs: null,
    };
    await recordAttempts(
      p.pool,
      Array.from({ length: 5 }, (_, i) => ({
        endpointId: endpoint.id,
        messageId: `msg_same_instant_${i}`,
        trigger: 'dispatcher' as const,
        attemptedAt: at,
        result,
        status: null,
      })),
    );
    for (let i = 0; i < 2; i++)
      expect(
        (await call(p.base, 'POST', `/api/portal/webhooks/${endpoint.id}/test`, asAdmin(accessToken, workspace.slug)))
          .status,
      ).toBe(200);
    const seen: string[] = [];
    let before: string | undefined;
    for (;;) {
      const query = new URLSearchParams({ limit: '2', ...(before ? { before } : {}) });
      const page = await call(
        p.base,
        'GET',
        `/api/portal/webhooks/${endpoint.id}/attempts?${query}`,
        asAdmin(accessToken, workspace.slug),
      );
      expect(page.status).toBe(200);
      const ids = (page.body.attempts as { id: string }[]).map((a) => a.id);
      seen.push(...ids);
      if (ids.length < 2) break;
      before = ids.at(-1);
    }
    // newest first: the two test events, then the five of the same instant; each once
    const { rows } = await p.pool.query<{ id: string }>(
      'SELECT public_id::text AS id FROM webhook_attempts a WHERE endpoint_id = $1 ORDER BY attempted_at DESC, a.id DESC',
      [endpoint.id],
    );
    expect(seen).toEqual(rows.map((r) => r.id));
    expect(new Set(seen).size).toBe(7);
    // random ids, not a counter shared by every workspace's attempts
    for (const id of seen) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  } finally {
    await receiver.close();
  }
});
