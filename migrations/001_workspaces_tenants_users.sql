-- Workspaces (the customer-facing unit), the tenants behind them, and the people who log in.
CREATE TABLE workspaces (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9-]{1,30}$'),
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- A tenant is the ERP instance behind a workspace (TenantClient metadata.name = subdomain).
CREATE TABLE tenants (
  name           text PRIMARY KEY CHECK (name ~ '^[a-z0-9-]{1,30}$'),
  workspace_id   uuid REFERENCES workspaces (id) ON DELETE SET NULL,
  project_id     integer NOT NULL,
  tier           text NOT NULL CHECK (tier IN ('starter', 'pro', 'enterprise')),
  erp_version    text NOT NULL DEFAULT '18' CHECK (erp_version IN ('17', '18', '19')),
  owner_email    text NOT NULL,
  owner_name     text NOT NULL,
  -- how many welcome e-mails were started for this tenant; numbers the workflow ids welcome:<tenant>:<n>
  welcome_count  integer NOT NULL DEFAULT 0,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email          text NOT NULL UNIQUE,
  name           text NOT NULL DEFAULT '',
  password_hash  text,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  role          text NOT NULL CHECK (role IN ('admin', 'member')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, workspace_id)
);
