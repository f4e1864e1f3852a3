/**
 * Failed deliveries, retried by their endpoint's durable Temporal workflow
 * (`webhook-endpoint-retries-<endpoint>`) on a shortened schedule (200 ms, 400 ms, 800 ms, 1.6 s ± 10 %):
 * growing spacing, Retry-After, 429, 410 disabling the endpoint (by the same workflow),
 * retries exhausted → failed + admins alerted → replay delivers.
 *
 * With RECORD_HISTORIES=1 the endpoint workflow's histories of failing 3 times, of a 410 on the
 * first attempt and of a replay are written to test/fixtures/histories.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { webhookEndpointRetriesId } from '../../domain/webhooks/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';
import { call } from '../support/workspace-api.js';
import { recordHistory } from '../support/record-history.js';
import { testKeys } from '../support/service-keys.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

let p: WebhookPlatform;
beforeAll(async () => {
  p = await startWebhookPlatform({
    WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms,1600ms',
    WEBHOOK_SLOW_DOWN_MIN: '1500ms',
  });
});
afterAll(async () => p?.close());

const asAdmin = (token: string, slug: string) => ({ token, headers: { 'x-workspace': slug } });
const attemptsOf = async (e: { accessToken: string; workspace: { slug: string }; endpoint: { id: string } }) =>
  (
    await call(
      p.base,
      'GET',
      `/api/portal/webhooks/${e.endpoint.id}/attempts`,
      asAdmin(e.accessToken, e.workspace.slug),
    )
  ).body.attempts as {
    outcome: string;
    statusCode: number | null;
    trigger: string;
    attemptedAt: string;
  }[];
const deliveryStatus = async (endpointId: string) =>
  (
    await p.pool.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1',
      [endpointId],
    )
  ).rows;
it('fails three times then succeeds: four attempts, spacing growing exponentially, delivered once, every attempt recorded, timers in the history', async () => {
  const receiver = await startReceiver((_r, n) => (n <= 3 ? { status: 500, body: 'database down' } : { status: 204 }));
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    await p.publish(e.workspace.slug);
    await expect
      .poll(() => deliveryStatus(e.endpoint.id), { timeout: 30_000 })
      .toEqual([{ status: 'delivered', attempts: 4 }]);
    expect(receiver.received).toHaveLength(4);
    expect(receiver.ids().size).toBe(1);
    for (const r of receiver.received)
      expect(() => new Webhook(e.secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    const attempts = (await attemptsOf(e)).reverse();
    expect(attempts.map((a) => [a.trigger, a.statusCode])).toEqual([
      ['dispatcher', 500],
      ['retry', 500],
      ['retry', 500],
      ['retry', 204],
    ]);
    // the retries ran in the endpoint's retry workflow, found by the workspace's slug, its id or the endpoint
    const handle = p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id));
    expect(await handle.result()).toEqual({ status: 'drained', attempts: 3, delivered: 1, failed: 0 });
    const attributes = (await handle.describe()).typedSearchAttributes;
    expect(attributes.get(searchAttributes.workspace)).toBe(e.workspace.slug);
    expect(attributes.get(searchAttributes.workspaceId)).toBe(e.workspace.id);
    expect(attributes.get(searchAttributes.webhookEndpoint)).toBe(e.endpoint.id);
    // its history holds the wait for the earliest due time as a durable timer
    const history = await handle.fetchHistory();
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(
        path.resolve(import.meta.dirname, '../fixtures/histories/webhook-endpoint-retries.json'),
        JSON.stringify(history, null, 2) + '\n',
      );
    }
    expect(history.events!.some((ev) => ev.timerStartedEventAttributes)).toBe(true);
    // 200, 400, 800 ms ± 10 % between the attempts the receiver saw: never earlier, spacing growing (the
    // first wait also holds the workflow's start, so the growth is read from the later ones)
    const gaps = receiver.received.slice(1).map((r, i) => r.at - receiver.received[i]!.at);
    [180, 360, 720].forEach((least, i) => expect(gaps[i]).toBeGreaterThanOrEqual(least - 5));
    expect(gaps[2]!).toBeGreaterThan(gaps[1]! * 1.5);
  } finally {
    await receiver.close();
  }
});

it('honours Retry-After (503 with Retry-After: 2 → the next attempt 2 s later, not 200 ms) and waits at least the slow-down minimum after a 429', async () => {
  const receiver = await startReceiver((_r, n) =>
    n === 1 ? { status: 503, headers: { 'retry-after': '2' } } : n === 2 ? { status: 429 } : { status: 204 },
  );
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    await p.publish(e.workspace.slug);
    await expect
      .poll(() => deliveryStatus(e.endpoint.id), { timeout: 30_000 })
      .toEqual([{ status: 'delivered', attempts: 3 }]);
    const [first, second, third] = receiver.received;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_950);
    // after the 429: at least WEBHOOK_SLOW_DOWN_MIN (1.5 s) although the schedule says 400 ms
    expect(third!.at - second!.at).toBeGreaterThanOrEqual(1_450);
  } finally {
    await receiver.close();
  }
});

it('410 Gone disables the endpoint at once, without retries, and tells the admins', async () => {
  const receiver = await startReceiver(() => ({ status: 410 }));
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    await p.publish(e.workspace.slug);
    await expect
      .poll(
        async () =>
          (await call(p.base, 'GET', `/api/portal/webhooks/${e.endpoint.id}`, asAdmin(e.accessToken, e.workspace.slug)))
            .body,
        { timeout: 20_000 },
      )
      .toMatchObject({ enabled: false, disabledReason: expect.stringContaining('410') });
    await expect
      .poll(() => p.mailsTo(e.admin.email).map((m) => m.subject), { timeout: 20_000 })
      .toEqual([expect.stringContaining('410 Gone')]);
    await expect
      .poll(() => deliveryStatus(e.endpoint.id), { timeout: 10_000 })
      .toEqual([{ status: 'failed', attempts: 1 }]);
    const gone = p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id));
    await expect(gone.result()).resolves.toMatchObject({ status: 'endpoint-disabled', attempts: 0 });
    await recordHistory(gone, 'webhook-endpoint-retries-gone');
    // a disabled endpoint gets nothing more (the dispatcher reads endpoints again after at most a second)
    await new Promise((r) => setTimeout(r, 1_200));
    await p.publish(e.workspace.slug);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.received).toHaveLength(1);
  } finally {
    await receiver.close();
  }
});

it('a workspace that turned integration notifications off gets no alert when its endpoint is disabled (settings)', async () => {
  const receiver = await startReceiver(() => ({ status: 410 }));
  try {
    const e = await p.workspaceWithEndpoint(receiver.url);
    const off = await call(p.base, 'PUT', '/api/portal/settings', {
      ...asAdmin(e.accessToken, e.workspace.slug),
      body: { notifications: { integrations: false } },
    });
    expect(off.body.notifications).toMatchObject({ integrations: false });
    await p.publish(e.workspace.slug);
    await expect
      .poll(() => deliveryStatus(e.endpoint.id), { timeout: 20_000 })
      .toEqual([{ status: 'failed', attempts: 1 }]);
    // the endpoint's retry workflow has ended: the alert would have been sent by now
    await p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id)).result();
    expect(
      (await call(p.base, 'GET', `/api/portal/webhooks/${e.endpoint.id}`, asAdmin(e.accessToken, e.workspace.slug)))
        .body,
    ).toMatchObject({ enabled: false });
    expect(p.mailsTo(e.admin.email)).toEqual([]);
  } finally {
    await receiver.close();
  }
});

it('a receiver down for the whole schedule: failed, admins alerted with the last error; replay delivers it once the receiver is back', async () => {
  const probe = await startReceiver();
  const port = probe.port;
  await probe.close(); // nothing listens on this port now: connection refused
  const e = await p.workspaceWithEndpoint(`http://127.0.0.1:${port}/hook`);
  const since = new Date(Date.now() - 60_000).toISOString();
  await p.publish(e.workspace.slug, 'payment.received', { payment: 'PAY-7', amount: 42 });
  await expect
    .poll(() => deliveryStatus(e.endpoint.id), { timeout: 30_000 })
    .toEqual([{ status: 'failed', attempts: 5 }]);
  await expect.poll(() => p.mailsTo(e.admin.email), { timeout: 20_000 }).toHaveLength(1);
  const mail = p.mailsTo(e.admin.email)[0]!;
  expect(mail.subject).toContain('Webhook delivery failed');
  expect(mail.text).toContain('ECONNREFUSED');
  expect((await attemptsOf(e)).every((a) => a.outcome === 'connection')).toBe(true);
  // the endpoint's retry workflow ends once nothing waits
  expect(await p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id)).result()).toEqual({
    status: 'drained',
    attempts: 4,
    delivered: 0,
    failed: 1,
  });

  const receiver = await startReceiver(undefined, '127.0.0.1', port);
  try {
    const res = await call(p.base, 'POST', `/api/portal/webhooks/${e.endpoint.id}/replay`, {
      ...asAdmin(e.accessToken, e.workspace.slug),
      body: { since },
    });
    expect(res.status).toBe(202);
    expect(res.body.replayed).toHaveLength(1);
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
    expect(
      new Webhook(e.secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>),
    ).toMatchObject({
      type: 'payment.received',
      data: { payment: 'PAY-7', amount: 42 },
    });
    await expect
      .poll(() => deliveryStatus(e.endpoint.id), { timeout: 10_000 })
      .toEqual([{ status: 'delivered', attempts: 6 }]);
    expect((await attemptsOf(e))[0]).toMatchObject({ trigger: 'replay', statusCode: 204 });
    const replay = p.temporal.workflow.getHandle(webhookEndpointRetriesId(e.endpoint.id));
    await expect(replay.result()).resolves.toEqual({ status: 'drained', attempts: 1, delivered: 1, failed: 0 });
    await recordHistory(replay, 'webhook-endpoint-retries-replay');
    const replayRun = (await replay.describe()).typedSearchAttributes;
    expect([replayRun.get(searchAttributes.workspace), replayRun.get(searchAttributes.workspaceId)]).toEqual([
      e.workspace.slug,
      e.workspace.id,
    ]);
    // one message replayed by id answers 404 for an unknown one
    const unknown = await call(p.base, 'POST', `/api/portal/webhooks/${e.endpoint.id}/replay`, {
      ...asAdmin(e.accessToken, e.workspace.slug),
      body: { messageId: 'msg_nope' },
    });
    expect(unknown.status).toBe(404);
  } finally {
    await receiver.close();
  }
});

it(
  'an operator replays one failed message with the CLI (npm run cli -- replay-webhooks <endpoint> --message <id>)',
  { timeout: 60_000 },
  async () => {
    let up = false;
    const receiver = await startReceiver(() => ({ status: up ? 204 : 500 }));
    try {
      const e = await p.workspaceWithEndpoint(receiver.url);
      await p.publish(e.workspace.slug);
      await expect
        .poll(() => deliveryStatus(e.endpoint.id), { timeout: 30_000 })
        .toEqual([{ status: 'failed', attempts: 5 }]);
      const messageId = String(receiver.received[0]!.headers['webhook-id']);
      up = true;
      const { stdout } = await promisify(execFile)(
        `${root}node_modules/.bin/tsx`,
        [`${root}cli/index.ts`, 'replay-webhooks', e.endpoint.id, '--message', messageId],
        {
          env: { PATH: process.env.PATH, PLANA_API_URL: p.base, OPS_API_KEY: testKeys.operator },
        },
      );
      expect(stdout).toContain(`${messageId}  workflow ${webhookEndpointRetriesId(e.endpoint.id)}`);
      await expect
        .poll(() => deliveryStatus(e.endpoint.id), { timeout: 20_000 })
        .toEqual([{ status: 'delivered', attempts: 6 }]);
      expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(messageId);
    } finally {
      await receiver.close();
    }
  },
);
