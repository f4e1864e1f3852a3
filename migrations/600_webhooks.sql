-- Tenant webhooks (issue 9): the endpoints a workspace registered, the messages (one per event),
-- one delivery per message × endpoint (the idempotency unit of the dispatcher), every attempt.

CREATE TABLE webhook_endpoints (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url                  text NOT NULL,
  description          text NOT NULL DEFAULT '',
  -- null: every event type
  event_types          text[],
  enabled              boolean NOT NULL DEFAULT true,
  disabled_reason      text,
  -- `whsec_…`, sealed with SECRETS_KEY (lib/secret-box.ts); the previous one signs too until its expiry
  secret_sealed        text NOT NULL,
  previous_secret_sealed text,
  previous_secret_expires_at timestamptz,
  -- set by the first failure after a success; cleared by a success; old enough → disabled
  failing_since        timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints (workspace_id);

-- A message: one event for one workspace; its id is the `webhook-id` receivers see on every attempt.
CREATE TABLE webhook_messages (
  id            text PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  event_type    text NOT NULL,
  -- the body sent, exactly (signed bytes)
  payload       text NOT NULL,
  -- when the event reached the dispatcher (event → delivered latency starts here)
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- One per message × endpoint: the dispatcher inserts it before acknowledging the stream entry.
CREATE TABLE webhook_deliveries (
  endpoint_id   uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id    text NOT NULL REFERENCES webhook_messages (id) ON DELETE CASCADE,
  workspace_id  uuid NOT NULL,
  -- pending: first attempt not yet recorded; retrying: in its Temporal workflow; delivered; failed
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'delivered', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  -- how many times it was replayed (numbers the replay workflow ids)
  replays       integer NOT NULL DEFAULT 0,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  delivered_at  timestamptz,
  PRIMARY KEY (endpoint_id, message_id)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (created_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at) WHERE status = 'failed';

CREATE TABLE webhook_attempts (
  id              bigserial PRIMARY KEY,
  endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id      text NOT NULL,
  attempted_at    timestamptz NOT NULL,
  -- dispatcher (first attempt), retry (Temporal workflow), replay, test
  trigger         text NOT NULL,
  status_code     integer,
  duration_ms     integer NOT NULL,
  -- ok, http-status, redirect, timeout, connection, forbidden-address, gone, endpoint-disabled
  outcome         text NOT NULL,
  error           text,
  response_headers jsonb NOT NULL DEFAULT '{}',
  response_excerpt text NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at DESC);
