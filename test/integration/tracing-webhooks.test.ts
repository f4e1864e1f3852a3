/**
 * The webhook attempts an event causes are in the trace of the request that published it: the
 * event carries that trace's `traceparent` (CloudEvents' distributed-tracing extension) through the
 * Redis stream, and the dispatcher's attempt is a span of it.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { inSpan, type Tracing } from '../../lib/tracing.js';
import { startTestTracing, zipkinTrace, type ZipkinSpan } from '../support/traces.js';
import { startReceiver, startWebhookPlatform, type WebhookPlatform } from '../support/webhooks.js';

let tracing: Tracing;
let p: WebhookPlatform;
beforeAll(async () => {
  tracing = startTestTracing();
  p = await startWebhookPlatform({ WEBHOOK_RETRY_SCHEDULE: '1h', ...inject('zipkinEnv') });
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
