-- Webhook history retention (WEBHOOK_RETENTION_DAYS, 90 days as Svix keeps by default): the daily
-- `webhook-retention` schedule deletes old messages (their deliveries with them) and old attempts.
-- These indexes let it find them by age.
CREATE INDEX webhook_messages_created ON webhook_messages (created_at);
CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);
