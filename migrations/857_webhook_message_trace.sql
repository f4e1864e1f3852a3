-- The trace context of the event a webhook message came from (CloudEvents' distributed-tracing
-- extension): every attempt of the message, the retries hours later included, is a span of that
-- trace (activities/webhook-retries.ts). Null when the event came without one.
ALTER TABLE webhook_messages ADD COLUMN traceparent text, ADD COLUMN tracestate text;
