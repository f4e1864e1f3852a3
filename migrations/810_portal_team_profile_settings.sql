-- The portal (issue 12): workspace settings, team invitations and e-mail changes.
-- Invitation and e-mail-change tokens are 32 random bytes; only their SHA-256 is stored.

CREATE TABLE workspace_settings (
  workspace_id   uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  locale         text NOT NULL DEFAULT 'en',        -- BCP 47, canonical form
  time_zone      text NOT NULL DEFAULT 'UTC',       -- IANA time zone name
  notifications  jsonb NOT NULL DEFAULT '{}',       -- preferences; absent keys take their defaults
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     uuid REFERENCES users (id) ON DELETE SET NULL
);

CREATE TABLE workspace_invitations (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  email         text NOT NULL,
  role          text NOT NULL CHECK (role IN ('admin', 'member')),
  token_hash    text NOT NULL UNIQUE,
  invited_by    uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  sent_count    integer NOT NULL DEFAULT 1,
  last_sent_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  accepted_at   timestamptz,
  accepted_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  revoked_at    timestamptz
);
-- at most one open invitation per e-mail address and workspace
CREATE UNIQUE INDEX workspace_invitations_open_idx
  ON workspace_invitations (workspace_id, lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL;

CREATE TABLE email_changes (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  new_email     text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  confirmed_at  timestamptz,
  cancelled_at  timestamptz
);
CREATE INDEX email_changes_user_idx ON email_changes (user_id);
