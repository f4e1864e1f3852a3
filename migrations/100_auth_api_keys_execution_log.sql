-- Interactive login: rotating refresh tokens. Only a SHA-256 of each token is stored (the token
-- is 32 random bytes, so a fast hash is enough). Tokens of one login share a family; presenting a
-- token that was already rotated revokes the whole family.
CREATE TABLE refresh_tokens (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  family_id   uuid NOT NULL,
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  rotated_at  timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);

-- Workspace API keys (specification §2.1). The token is ws_live_ + base32(32 random bytes); we keep
-- its bcrypt hash and a non-secret look-up prefix (ws_live_ + the first 8 base32 characters).
-- Revoking deletes the row (§3.1: "the record is removed").
CREATE TABLE workspace_api_keys (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  prefix        text NOT NULL UNIQUE,
  token_hash    text NOT NULL,
  scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0),
  created_by    uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX workspace_api_keys_workspace_idx ON workspace_api_keys (workspace_id, created_at);

-- "Higher limits are granted by arrangement" (§8): per-workspace overrides set by operators.
CREATE TABLE workspace_rate_limits (
  workspace_id      uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  burst             integer NOT NULL CHECK (burst > 0),
  per_second        double precision NOT NULL CHECK (per_second > 0),
  agent_per_minute  integer NOT NULL CHECK (agent_per_minute > 0),
  updated_at        timestamptz NOT NULL DEFAULT now()
);

-- The execution log (§5.2 rule 4): every call made with a workspace key. Partitioned by day so
-- that the 90-day retention drops whole partitions instead of deleting rows.
CREATE TABLE execution_log (
  id            bigint GENERATED ALWAYS AS IDENTITY,
  occurred_at   timestamptz NOT NULL,
  workspace_id  uuid NOT NULL,
  key_prefix    text NOT NULL,
  method        text NOT NULL,
  route         text NOT NULL,
  status        smallint NOT NULL,
  latency_ms    double precision NOT NULL,
  request_id    text NOT NULL,
  PRIMARY KEY (occurred_at, id)
) PARTITION BY RANGE (occurred_at);
CREATE INDEX execution_log_workspace_idx ON execution_log (workspace_id, occurred_at DESC, id DESC);

-- Creates the daily partitions execution_log_pYYYYMMDD for [from_day, from_day + days).
CREATE FUNCTION execution_log_ensure_partitions(from_day date, days integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  d date;
BEGIN
  FOR i IN 0 .. days - 1 LOOP
    d := from_day + i;
    EXECUTE format(
      'CREATE TABLE IF NOT EXISTS %I PARTITION OF execution_log FOR VALUES FROM (%L) TO (%L)',
      'execution_log_p' || to_char(d, 'YYYYMMDD'), d::text || ' 00:00:00+00', (d + 1)::text || ' 00:00:00+00');
  END LOOP;
END $$;

SELECT execution_log_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, 9);
