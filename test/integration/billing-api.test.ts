/**
 * Billing on the real platform (account API, worker, events and notifications services, SMTP sink,
 * Temporal, PostgreSQL, Redis): Stripe events verified and processed once, the subscription and
 * invoice routes with who may call them, and dunning: a failed payment e-mails the admins, the
 * grace period runs out, the workspace's keys get 403 `workspace-suspended`, payment lifts it.
 * With RECORD_HISTORIES=1 the dunning run's history is written to test/fixtures/histories.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { dunningWorkflowId } from '../../domain/billing/workflow-contract.js';
import { event, invoice, PRICES, sandboxIds, sendEvent, signature, subscription } from '../../sandbox/stripe/sender.js';
import { mailsTo, startTenantPlatform, type TenantPlatform } from '../support/tenant-platform.js';
import { workflowBundle } from '../support/env.js';
import { startTestApi } from '../support/api.js';
import { addUser, addWorkspace, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';
import { workflowSpanSinks } from '../../worker/tracing.js';

let p: TenantPlatform;
let hook: string;
let a: Awaited<ReturnType<typeof adminOfNewWorkspace>>;
let b: Awaited<ReturnType<typeof adminOfNewWorkspace>>;
let memberA: string;
let keyA: string;

const send = (evt: Parameters<typeof sendEvent>[2], opts?: Parameters<typeof sendEvent>[3]) =>
  sendEvent(hook, p.cfg.STRIPE_WEBHOOK_SECRET, evt, opts);

async function subscribe(slug: string, tier: 'starter' | 'pro' | 'enterprise' = 'pro', seats = 3) {
  const ids = sandboxIds(slug);
  const res = await send(
    event(
      'customer.subscription.created',
      subscription({ ...ids, id: ids.subscription, workspace: slug, tier, seats }),
    ),
  );
  expect(res.status).toBe(200);
  return ids;
}

async function billingEvents(subject: string) {
  const entries = await p.redis.xrange(p.cfg.EVENTS_STREAM, '-', '+');
  return entries
    .map(
      ([, fields]) =>
        JSON.parse(fields[fields.indexOf('event') + 1]!) as {
          id: string;
          type: string;
          subject?: string;
          source: string;
        },
    )
    .filter((e) => e.source === '/plana/billing/stripe' && e.subject === subject);
}

beforeAll(async () => {
  p = await startTenantPlatform({ BILLING_GRACE_PERIOD: '2s', WORKSPACE_STANDING_CACHE_MS: '0' });
  hook = `${p.cfg.API_PUBLIC_URL}/api/webhooks/stripe`;
  a = await adminOfNewWorkspace(p.cfg.API_PUBLIC_URL, p.pool);
  b = await adminOfNewWorkspace(p.cfg.API_PUBLIC_URL, p.pool);
  memberA = await login(p.cfg.API_PUBLIC_URL, await addUser(p.pool, [{ workspaceId: a.workspace.id, role: 'member' }]));
  keyA = (await createKey(p.cfg.API_PUBLIC_URL, a.accessToken, { name: 'all', scopes: ['*'] })).token;
  await subscribe(a.workspace.slug, 'pro', 3);
});

afterAll(async () => {
  await p?.close();
});

const api = (method: string, path: string, opts: Parameters<typeof call>[3] = {}) =>
  call(p.cfg.API_PUBLIC_URL, method, path, opts);

describe('POST /api/webhooks/stripe', () => {
  it('processes a signed event once, however often it is sent, and publishes it once', async () => {
    const ids = sandboxIds(a.workspace.slug);
    const evt = event(
      'customer.subscription.updated',
      subscription({ ...ids, id: ids.subscription, workspace: a.workspace.slug, tier: 'pro', seats: 4 }),
    );
    // Stripe retries (and an attacker replays within the tolerance), even at the same moment: one is processed
    const firsts = await Promise.all([send(evt), send(evt), send(evt)]);
    for (const r of firsts) expect(r).toMatchObject({ status: 200, body: { received: true, id: evt.id } });
    expect(firsts.filter((r) => r.body.duplicate === false)).toHaveLength(1);
    expect((await send(evt)).body).toMatchObject({ duplicate: true });
    const { rows } = await p.pool.query('SELECT outcome FROM billing_events WHERE id = $1', [evt.id]);
    expect(rows).toHaveLength(1);
    expect((await billingEvents(a.workspace.slug)).filter((e) => e.id === evt.id)).toHaveLength(1);
    expect((await api('GET', '/api/portal/subscription', { token: memberA })).body.seats).toBe(4);
  });

  it('refuses a forged, altered, unsigned or stale event with 400 and keeps nothing of it', async () => {
    const ids = sandboxIds(a.workspace.slug);
    const evt = event(
      'customer.subscription.updated',
      subscription({ ...ids, id: ids.subscription, workspace: a.workspace.slug, tier: 'enterprise', seats: 99 }),
    );
    const payload = JSON.stringify(evt);
    const cases = {
      'signed with another secret': { signature: signature(payload, 'whsec_not_the_endpoint_secret') },
      'body altered after signing': {
        payload: payload.replace('"seats"', '"seats"').replace('99', '98'),
        signature: signature(payload, p.cfg.STRIPE_WEBHOOK_SECRET),
      },
      'signed too long ago (replay)': {
        signature: signature(
          payload,
          p.cfg.STRIPE_WEBHOOK_SECRET,
          Math.floor(Date.now() / 1000) - p.cfg.STRIPE_WEBHOOK_TOLERANCE_SECONDS - 60,
        ),
      },
      'garbage signature': { signature: 't=1,v1=deadbeef' },
    };
    for (const [name, opts] of Object.entries(cases)) {
      const res = await send(evt, opts);
      expect(res.status, name).toBe(400);
      expect(res.body, name).toMatchObject({ status: 400, type: expect.any(String), detail: expect.any(String) });
      expect(JSON.stringify(res.body), name).not.toContain(p.cfg.STRIPE_WEBHOOK_SECRET);
    }
    const unsigned = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: payload,
    });
    expect(unsigned.status).toBe(400);
    expect((await unsigned.json()).detail).toMatch(/Stripe-Signature/);
    expect((await p.pool.query('SELECT 1 FROM billing_events WHERE id = $1', [evt.id])).rowCount).toBe(0);
    expect((await api('GET', '/api/portal/subscription', { token: memberA })).body).toMatchObject({
      tier: 'pro',
      seats: 4,
    });
  });

  it('keeps nothing of an event it could not finish (events service down: 500), and processes it whole when Stripe retries', async () => {
    const ws = await addWorkspace(p.pool);
    const ids = sandboxIds(ws.slug);
    const evt = event(
      'customer.subscription.created',
      subscription({ ...ids, id: ids.subscription, workspace: ws.slug, tier: 'pro', seats: 2 }),
    );
    const cutOff = await startTestApi({
      TEMPORAL_TASK_QUEUE: p.cfg.TEMPORAL_TASK_QUEUE,
      EVENTS_URL: 'http://127.0.0.1:9',
      EVENTS_STREAM: p.cfg.EVENTS_STREAM,
    });
    try {
      const failed = await sendEvent(`${cutOff.base}/api/webhooks/stripe`, p.cfg.STRIPE_WEBHOOK_SECRET, evt);
      expect(failed.status).toBe(500);
      expect(JSON.stringify(failed.body)).not.toMatch(/127\.0\.0\.1:9|ECONNREFUSED/);
    } finally {
      await cutOff.close();
    }
    expect((await p.pool.query('SELECT 1 FROM billing_events WHERE id = $1', [evt.id])).rowCount).toBe(0);
    expect((await p.pool.query('SELECT 1 FROM subscriptions WHERE workspace_id = $1', [ws.id])).rowCount).toBe(0);
    expect(await send(evt)).toMatchObject({ status: 200, body: { duplicate: false } });
    expect((await p.pool.query('SELECT tier, seats FROM subscriptions WHERE workspace_id = $1', [ws.id])).rows).toEqual(
      [{ tier: 'pro', seats: 2 }],
    );
    expect((await billingEvents(ws.slug)).map((e) => e.id)).toEqual([evt.id]);
  });

  it('ignores an older subscription event that arrives after a newer one', async () => {
    const ids = sandboxIds(a.workspace.slug);
    const old = event(
      'customer.subscription.updated',
      subscription({ ...ids, id: ids.subscription, workspace: a.workspace.slug, tier: 'starter', seats: 1 }),
      {
        created: Math.floor(Date.now() / 1000) - 3600,
      },
    );
    const res = await send(old);
    expect(res).toMatchObject({ status: 200, body: { duplicate: false, outcome: expect.stringMatching(/^stale/) } });
    expect((await api('GET', '/api/portal/subscription', { token: memberA })).body).toMatchObject({
      tier: 'pro',
      seats: 4,
    });
  });

  it('answers 200 and ignores an event for no known workspace, so Stripe stops sending it', async () => {
    const evt = event(
      'customer.subscription.created',
      subscription({ id: 'sub_nobody1', customer: 'cus_nobody1', workspace: 'no-such-workspace', tier: 'pro' }),
    );
    const res = await send(evt);
    expect(res).toMatchObject({ status: 200, body: { duplicate: false, outcome: expect.stringMatching(/^ignored/) } });
  });
});

describe('GET /api/portal/subscription', () => {
  it('shows any member tier, status, period, seats and the next invoice', async () => {
    const res = await api('GET', '/api/portal/subscription', { token: memberA });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workspace: a.workspace.slug,
      tier: 'pro',
      status: 'active',
      seats: 4,
      currentPeriod: { start: expect.any(String), end: expect.any(String) },
      suspendedAt: null,
      provider: { name: 'stripe', subscriptionId: sandboxIds(a.workspace.slug).subscription },
    });
    expect(res.body.nextInvoice).toEqual({
      date: res.body.currentPeriod.end,
      amountDue: 4 * PRICES.pro,
      currency: 'eur',
    });
  });

  it('refuses no session (401), a workspace key (403) and another workspace (403); 404 without a subscription', async () => {
    expect((await api('GET', '/api/portal/subscription')).status).toBe(401);
    const byKey = await api('GET', '/api/portal/subscription', { token: keyA });
    expect(byKey.status).toBe(403);
    expect(byKey.body.detail).toMatch(/interactive login/);
    const other = await api('GET', '/api/portal/subscription', {
      token: b.accessToken,
      headers: { 'x-workspace': a.workspace.slug },
    });
    expect(other.status).toBe(403);
    const none = await api('GET', '/api/portal/subscription', { token: b.accessToken });
    expect(none).toMatchObject({ status: 404, body: { detail: expect.stringContaining('no subscription') } });
  });
});

describe('GET /api/billing/invoices', () => {
  let paidId: string;
  beforeAll(async () => {
    const ids = sandboxIds(a.workspace.slug);
    const inv = invoice({ ...ids, workspace: a.workspace.slug, tier: 'pro', seats: 4, status: 'paid' });
    paidId = inv.id!;
    expect((await send(event('invoice.paid', inv))).status).toBe(200);
  });

  it('lists the workspace invoices for an admin, and shows one with amounts, period and links', async () => {
    const list = await api('GET', '/api/billing/invoices', { token: a.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: { id: string }) => i.id)).toContain(paidId);
    const one = await api('GET', `/api/billing/invoices/${paidId}`, { token: a.accessToken });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: paidId,
      status: 'paid',
      currency: 'eur',
      amountDue: 4 * PRICES.pro,
      amountPaid: 4 * PRICES.pro,
      amountRemaining: 0,
      period: { start: expect.any(String), end: expect.any(String) },
      hostedInvoiceUrl: expect.stringContaining(paidId),
      invoicePdf: expect.stringContaining('/pdf'),
    });
  });

  it('refuses a member, a key, another workspace; 404 for another workspace invoice; 400 for a malformed id', async () => {
    expect((await api('GET', '/api/billing/invoices')).status).toBe(401);
    expect((await api('GET', '/api/billing/invoices', { token: memberA })).status).toBe(403);
    expect((await api('GET', `/api/billing/invoices/${paidId}`, { token: keyA })).status).toBe(403);
    expect(
      (
        await api('GET', '/api/billing/invoices', {
          token: b.accessToken,
          headers: { 'x-workspace': a.workspace.slug },
        })
      ).status,
    ).toBe(403);
    const foreign = await api('GET', `/api/billing/invoices/${paidId}`, { token: b.accessToken });
    expect(foreign.status).toBe(404);
    expect((await api('GET', '/api/billing/invoices', { token: b.accessToken })).body.items).toEqual([]);
    expect((await api('GET', '/api/billing/invoices/in_unknown', { token: a.accessToken })).status).toBe(404);
    expect((await api('GET', '/api/billing/invoices/in_x%27%20OR%201=1', { token: a.accessToken })).status).toBe(400);
  });
});

describe('dunning', () => {
  it('e-mails the admins, suspends the workspace after the grace period (keys 403, login works) and lifts it on payment', async () => {
    const ws = await addWorkspace(p.pool);
    const admin = await addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const member = await addUser(p.pool, [{ workspaceId: ws.id, role: 'member' }]);
    const token = await login(p.cfg.API_PUBLIC_URL, admin);
    const key = (await createKey(p.cfg.API_PUBLIC_URL, token, { name: 'reporting', scopes: ['*'] })).token;
    const ids = await subscribe(ws.slug, 'starter', 1);
    // a key route of the Workspace API: this workspace has no tenant ERP, so a key that passes gets 404 saying so
    const keyCall = () => api('GET', `/api/portal/odoo/${ws.slug}/alerts`, { token: key });
    const passes = (r: Awaited<ReturnType<typeof keyCall>>) =>
      expect(r).toMatchObject({ status: 404, body: { detail: `Workspace ${ws.slug} has no tenant ERP` } });
    passes(await keyCall());

    const failed = invoice({ ...ids, workspace: ws.slug, tier: 'starter', status: 'open' });
    const res = await send(event('invoice.payment_failed', failed));
    expect(res.body.outcome).toContain(dunningWorkflowId(ws.slug, 1));
    // a second failed attempt of the same run starts nothing new
    const retry = await send(event('invoice.payment_failed', { ...failed, attempt_count: 2 }));
    expect(retry.body.outcome).toContain('dunning already under way');

    const handle = p.temporal.workflow.getHandle(dunningWorkflowId(ws.slug, 1));
    await expect
      .poll(async () => (await api('GET', '/api/portal/subscription', { token })).body.suspendedAt, {
        timeout: 30_000,
        interval: 200,
      })
      .not.toBeNull();
    const refused = await keyCall();
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/problem\+json/);
    expect(refused.body).toMatchObject({
      type: expect.stringMatching(/\/workspace-suspended$/),
      status: 403,
      code: 'WORKSPACE_SUSPENDED',
    });
    // the admin can still sign in and see what to pay
    const again = await login(p.cfg.API_PUBLIC_URL, admin);
    const invoices = await api('GET', '/api/billing/invoices', { token: again });
    expect(invoices.body.items[0]).toMatchObject({ id: failed.id, status: 'open' });
    await expect
      .poll(() => mailsTo(p, admin.email).map((m) => m.subject), { timeout: 15_000, interval: 100 })
      .toEqual(
        expect.arrayContaining([`Payment failed for workspace ${ws.slug}`, `Workspace ${ws.slug} is suspended`]),
      );
    const mails = mailsTo(p, admin.email);
    expect(mails).toHaveLength(2);
    expect(mails.find((m) => m.subject.startsWith('Payment failed'))!.text).toContain(
      `${p.cfg.API_PUBLIC_URL}/w/${ws.slug}`,
    );
    expect(mailsTo(p, member.email)).toEqual([]);

    const paid = await send(
      event('invoice.paid', { ...failed, status: 'paid', amount_paid: failed.amount_due, amount_remaining: 0 }),
    );
    expect(paid.body.outcome).toContain('suspension lifted');
    passes(await keyCall());
    expect(await handle.result()).toBe('paid-after-suspension');
    // its history replays with the current code (RECORD_HISTORIES=1 keeps it as a fixture for replay.test.ts)
    const history = await handle.fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: workflowBundle(), sinks: workflowSpanSinks() },
      history,
      handle.workflowId,
    );
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(
        path.resolve(import.meta.dirname, '../fixtures/histories/dun-workspace.json'),
        JSON.stringify(history, null, 2) + '\n',
      );
    }
    expect((await api('GET', '/api/portal/subscription', { token })).body).toMatchObject({
      status: 'active',
      suspendedAt: null,
      pastDueSince: null,
    });
    expect((await billingEvents(ws.slug)).map((e) => e.type)).toEqual(
      expect.arrayContaining(['billing.invoice.payment_failed', 'billing.workspace.reinstated']),
    );
  });

  it("honours the workspace's billing preference: no payment reminder when it is off; the suspension notice is sent anyway", async () => {
    const ws = await addWorkspace(p.pool);
    const admin = await addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const token = await login(p.cfg.API_PUBLIC_URL, admin);
    const off = await api('PUT', '/api/portal/settings', { token, body: { notifications: { billing: false } } });
    expect(off.body.notifications).toMatchObject({ billing: false });
    const ids = await subscribe(ws.slug, 'starter', 1);
    const failed = invoice({ ...ids, workspace: ws.slug, tier: 'starter', status: 'open' });
    await send(event('invoice.payment_failed', failed));
    // the reminder is sent (or not) before the grace period starts; the suspension notice comes after it
    await expect
      .poll(() => mailsTo(p, admin.email).map((m) => m.subject), { timeout: 30_000, interval: 100 })
      .toEqual([`Workspace ${ws.slug} is suspended`]);
    const handle = p.temporal.workflow.getHandle(dunningWorkflowId(ws.slug, 1));
    await send(
      event('invoice.paid', { ...failed, status: 'paid', amount_paid: failed.amount_due, amount_remaining: 0 }),
    );
    expect(await handle.result()).toBe('paid-after-suspension');
    expect(mailsTo(p, admin.email)).toHaveLength(1);
  });

  it('a payment within the grace period ends the run: never suspended, no second e-mail', async () => {
    // an API whose grace period is an hour, on the same worker, events stream and task queue
    const longGrace = await startTestApi({
      TEMPORAL_TASK_QUEUE: p.cfg.TEMPORAL_TASK_QUEUE,
      EVENTS_URL: p.cfg.EVENTS_URL,
      EVENTS_STREAM: p.cfg.EVENTS_STREAM,
      BILLING_GRACE_PERIOD: '1h',
    });
    try {
      const ws = await addWorkspace(p.pool);
      const admin = await addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]);
      const ids = await subscribe(ws.slug, 'enterprise', 2);
      const hookOf = `${longGrace.base}/api/webhooks/stripe`;
      const failed = invoice({ ...ids, workspace: ws.slug, tier: 'enterprise', seats: 2, status: 'open' });
      await sendEvent(hookOf, p.cfg.STRIPE_WEBHOOK_SECRET, event('invoice.payment_failed', failed));
      const handle = p.temporal.workflow.getHandle(dunningWorkflowId(ws.slug, 1));
      await expect.poll(() => mailsTo(p, admin.email).length, { timeout: 15_000, interval: 100 }).toBe(1);
      const token = await login(p.cfg.API_PUBLIC_URL, admin);
      expect((await api('GET', '/api/portal/subscription', { token })).body).toMatchObject({
        status: 'past_due',
        pastDueSince: expect.any(String),
        suspendedAt: null,
      });

      await sendEvent(
        hookOf,
        p.cfg.STRIPE_WEBHOOK_SECRET,
        event('invoice.paid', { ...failed, status: 'paid', amount_paid: failed.amount_due, amount_remaining: 0 }),
      );
      expect(await handle.result()).toBe('paid-within-grace');
      expect((await api('GET', '/api/portal/subscription', { token })).body).toMatchObject({
        status: 'active',
        pastDueSince: null,
        suspendedAt: null,
      });
      expect(mailsTo(p, admin.email).map((m) => m.subject)).toEqual([`Payment failed for workspace ${ws.slug}`]);
      // the next failure is a new run with its own workflow
      const next = await sendEvent(
        hookOf,
        p.cfg.STRIPE_WEBHOOK_SECRET,
        event('invoice.payment_failed', invoice({ ...ids, workspace: ws.slug, tier: 'enterprise', status: 'open' })),
      );
      expect(next.body.outcome).toContain(dunningWorkflowId(ws.slug, 2));
      await p.temporal.workflow.getHandle(dunningWorkflowId(ws.slug, 2)).terminate('test over');
    } finally {
      await longGrace.close();
    }
  });
});
