/**
 * The webhook attempts an event causes are in the trace of the request that published it: the
 * event carries that trace's `traceparent` (CloudEvents' distributed-tracing extension) through the
 * Redis stream, and the dispatcher's attempt is a span of it; so is every retry, made later by the
 * endpoint's retry workflow.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { inSpan, type Tracing } from '../../lib/tracing.js';
import { startTestTracing, zipkinTrace, type ZipkinSpan } from '../support/traces.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let tracing: Tracing;
let p: WebhookPlatform;
beforeAll(async () => {
  tracing = startTestTracing();
  p = await startWebhookPlatform({ WEBHOOK_RETRY_SCHEDULE: '1s', ...inject('zipkinEnv') });
});
afterAll(async () => {
  await p?.close();
});

const parentOf = (spans: ZipkinSpan[], span: ZipkinSpan) => spans.find((s) => s.id === span.parentId);

it("an event's webhook attempt is a span of the trace that published the event", async () => {
  const receiver = await startReceiver();
  try {
    const { workspace } = await p.workspaceWithEndpoint(receiver.url, { eventTypes: ['invoice.posted'] });
    const traceId = await inSpan('publish invoice.posted', {}, async (span) => {
      await p.publish(workspace.slug, 'invoice.posted', { invoice: 'INV/2026/0007' });
      return span.spanContext().traceId;
    });
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);

    const spans = await zipkinTrace(tracing, traceId, (s) => s.some((span) => span.name === 'webhook attempt'));
    const attempt = spans.find((s) => s.name === 'webhook attempt')!;
    expect(attempt.tags).toMatchObject({ 'plana.webhook.outcome': 'ok' });
    // the attempt's parent is the events service's span of the publishing request
    expect(parentOf(spans, attempt)).toMatchObject({ kind: 'SERVER', name: 'post /api/v1/events' });
    // the POST to the receiver is the attempt's child
    const post = spans.find((s) => s.parentId === attempt.id)!;
    expect(post).toMatchObject({ kind: 'CLIENT' });
  } finally {
    await receiver.close();
  }
});

it("a webhook retry is a span of the event's trace too", async () => {
  // the receiver fails the first attempt and takes the second (the retry workflow's, a second later)
  const receiver = await startReceiver((_req, n) => ({ status: n === 1 ? 503 : 204 }));
  try {
    const { workspace } = await p.workspaceWithEndpoint(receiver.url, { eventTypes: ['invoice.posted'] });
    const traceId = await inSpan('publish invoice.posted', {}, async (span) => {
      await p.publish(workspace.slug, 'invoice.posted', { invoice: 'INV/2026/0008' });
      return span.spanContext().traceId;
    });
    await expect.poll(() => receiver.received.length, { timeout: 30_000 }).toBe(2);

    const attemptsOf = (s: ZipkinSpan[]) => s.filter((span) => span.name === 'webhook attempt');
    const spans = await zipkinTrace(tracing, traceId, (s) => attemptsOf(s).length === 2);
    const outcomes = attemptsOf(spans).map((a) => a.tags?.['plana.webhook.outcome']);
    expect(outcomes.sort()).toEqual(['http-status', 'ok']);
    // both name the same message, the one the receiver saw twice
    const messageIds = new Set(attemptsOf(spans).map((a) => a.tags?.['plana.webhook.message']));
    expect(messageIds).toEqual(new Set([receiver.received[0]!.headers['webhook-id']]));
  } finally {
    await receiver.close();
  }
});
