-- One identity: the owner's welcome e-mail carries an activation link, and a forgotten password
-- can be reset by e-mail. Link tokens are 32 random bytes; only their SHA-256 is stored.

-- The owner's activation is an invitation of its own purpose (the same single-use link, acceptance
-- and page as a team invitation): the owner is a member already and chooses a password by it.
ALTER TABLE workspace_invitations
  ADD COLUMN purpose text NOT NULL DEFAULT 'team' CHECK (purpose IN ('team', 'activation'));

CREATE TABLE password_resets (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  -- a newer link (or a reset by another link) replaces this one
  replaced_at timestamptz
);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);
