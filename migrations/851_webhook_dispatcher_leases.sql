-- Which dispatcher holds a pending delivery (it recorded it from its read and is to make its first
-- attempt), and each dispatcher's lease: while a dispatcher's lease runs, the other dispatchers'
-- sweepers leave the pending deliveries it holds alone (they may wait in its endpoint lanes longer
-- than WEBHOOK_SWEEP_AFTER); once it lapses (the process died), they are swept.
CREATE TABLE IF NOT EXISTS webhook_dispatchers (
  consumer     text PRIMARY KEY,
  lease_until  timestamptz NOT NULL
);
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS dispatcher text;
