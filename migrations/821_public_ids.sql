-- Ids customers see reveal nothing about other workspaces: the execution log's and the webhook
-- attempts' bigint ids come from one sequence shared by every workspace, so they stay internal
-- (ordering, keyset paging) and each row gets a random public id. Existing rows get one too.
ALTER TABLE execution_log ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();

ALTER TABLE webhook_attempts ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX webhook_attempts_public_id ON webhook_attempts (public_id);
