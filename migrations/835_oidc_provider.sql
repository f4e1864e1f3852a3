-- The platform's own OpenID provider (services/auth/oidc-provider.ts, oidc-provider): its signing
-- keys (sealed with SECRETS_KEY, kept across restarts, rotated with the old key still published),
-- its relying parties (one per tenant ERP, written by provisioning) and its short-lived records
-- (sessions, interactions, authorization codes, access tokens, grants).
CREATE TABLE oidc_signing_keys (
  kid          text PRIMARY KEY,
  sealed_jwk   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- set when a newer key took over signing; the key stays in the JWKS until tokens it signed expired
  retired_at   timestamptz
);

CREATE TABLE oidc_clients (
  client_id      text PRIMARY KEY,
  -- the tenant (name) whose ERP this client is; provisioning creates and removes it
  tenant         text NOT NULL,
  redirect_uri   text NOT NULL,
  sealed_secret  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX oidc_clients_tenant ON oidc_clients (tenant);

CREATE TABLE oidc_records (
  model        text NOT NULL,
  id           text NOT NULL,
  payload      jsonb NOT NULL,
  grant_id     text,
  uid          text,
  user_code    text,
  expires_at   timestamptz,
  consumed_at  timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX oidc_records_grant ON oidc_records (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oidc_records_uid ON oidc_records (uid) WHERE uid IS NOT NULL;
CREATE INDEX oidc_records_expires ON oidc_records (expires_at);
