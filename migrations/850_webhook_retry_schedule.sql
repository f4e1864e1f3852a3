-- The retry schedule of deliveries waiting on their endpoint's retry workflow
-- (`webhook-endpoint-retries-<endpointId>`): when each one's next attempt is due. Null: not waiting
-- on that workflow (pending, delivered, failed, or retried by its own per-message workflow, as
-- replays and deliveries handed over before this column are).
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz;
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at)
  WHERE status = 'retrying' AND next_attempt_at IS NOT NULL;
