-- Service keys (issue 10, specification §2.2, §5.4): one key per caller/target pair.
--
-- service_keys is the TARGET side's registry: what each service accepts. It holds the SHA-256 of a
-- key, never the key. A key is 32 random bytes (hex), so an unsalted fast hash is enough: there is
-- nothing to guess by brute force, and a fast hash keeps the per-request check in microseconds.
-- States follow AWS Secrets Manager's staging labels: pending (accepted, not yet handed to the
-- consumer), current, previous (still accepted while the consumer switches), revoked (401).
CREATE TABLE service_keys (
  key_id        text PRIMARY KEY CHECK (key_id ~ '^sk_[0-9a-f]{8}$'),
  caller        text NOT NULL CHECK (caller ~ '^[a-z][a-z0-9-]{0,39}$'),
  target        text NOT NULL CHECK (target ~ '^[a-z][a-z0-9-]{0,39}$'),
  key_hash      bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  state         text NOT NULL CHECK (state IN ('pending', 'current', 'previous', 'revoked')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  promoted_at   timestamptz,
  revoked_at    timestamptz CHECK ((state = 'revoked') = (revoked_at IS NOT NULL)),
  -- usage, flushed by each target every few seconds (never a write per request)
  last_used_at  timestamptz,
  use_count     bigint NOT NULL DEFAULT 0
);
-- at most one current and one pending key per pair (a rotation in flight holds the pending one)
CREATE UNIQUE INDEX service_keys_one_current ON service_keys (caller, target) WHERE state = 'current';
CREATE UNIQUE INDEX service_keys_one_pending ON service_keys (caller, target) WHERE state = 'pending';
CREATE INDEX service_keys_by_target ON service_keys (target) WHERE state <> 'revoked';

-- Every change of what a target accepts is announced on channel `service_keys` (payload: the
-- target), so each running target reloads its accepted keys within milliseconds.
CREATE FUNCTION service_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_keys', COALESCE(NEW.target, OLD.target));
  RETURN NULL;
END $$;
CREATE TRIGGER service_keys_changed
  AFTER INSERT OR DELETE OR UPDATE OF state, key_hash ON service_keys
  FOR EACH ROW EXECUTE FUNCTION service_keys_notify();

-- service_key_secrets is the CONSUMER side's local secret store: versions of the key a caller
-- sends to a target, sealed with SECRETS_KEY (lib/secret-box.ts), the current version marked.
-- In production a Kubernetes Secret or Vault takes its place behind the same SecretStore interface.
CREATE TABLE service_key_secrets (
  caller      text NOT NULL,
  target      text NOT NULL,
  version     integer NOT NULL CHECK (version >= 1),
  key_id      text NOT NULL,            -- public: which registry key this version holds
  sealed      text NOT NULL,            -- seal(key, SECRETS_KEY)
  is_current  boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (caller, target, version)
);
CREATE UNIQUE INDEX service_key_secrets_one_current ON service_key_secrets (caller, target) WHERE is_current;

CREATE FUNCTION service_key_secrets_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_key_secrets', COALESCE(NEW.caller, OLD.caller) || ' ' || COALESCE(NEW.target, OLD.target));
  RETURN NULL;
END $$;
CREATE TRIGGER service_key_secrets_changed
  AFTER INSERT OR DELETE OR UPDATE ON service_key_secrets
  FOR EACH ROW EXECUTE FUNCTION service_key_secrets_notify();
