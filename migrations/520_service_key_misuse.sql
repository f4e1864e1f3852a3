-- Uses of revoked service keys (issue 10, step 5: "any later use of the old key raises an alert
-- and an event"). One row per key id: targets record a use at most once per alert interval per
-- process (never on a normal request); the worker's alerter sends one alert mail and one
-- `service-key.revoked-key-used` CloudEvent per row that is pending and was not alerted within the
-- interval, then clears `pending`. `alerts` numbers them (the idempotency key of each alert).
CREATE TABLE service_key_misuse (
  key_id        text PRIMARY KEY REFERENCES service_keys (key_id),
  caller        text NOT NULL,
  target        text NOT NULL,
  first_seen_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  reports       bigint NOT NULL DEFAULT 1,
  pending       boolean NOT NULL DEFAULT true,
  alerts        integer NOT NULL DEFAULT 0,
  alerted_at    timestamptz,
  last_alert    text
);
CREATE INDEX service_key_misuse_pending ON service_key_misuse (last_seen_at) WHERE pending;
