-- TenantClient resources (issue 4): the desired spec the ops API accepted (generation raised on
-- every change) and the status the tenant lifecycle workflow mirrors here, so `get tenants` and
-- the portal read it without asking Temporal.
CREATE TABLE tenant_clients (
  name                 text PRIMARY KEY CHECK (name ~ '^[a-z0-9-]{1,30}$'),
  uid                  uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  spec                 jsonb NOT NULL,
  generation           integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
  observed_generation  integer NOT NULL DEFAULT 0,
  phase                text NOT NULL DEFAULT 'Provisioning'
                       CHECK (phase IN ('Provisioning', 'Ready', 'Unavailable', 'Cancelled', 'Deprovisioning', 'Deprovisioned')),
  conditions           jsonb NOT NULL DEFAULT '[]',   -- Synced and Ready, Crossplane-style
  resources            jsonb NOT NULL DEFAULT '{}',   -- per composed resource: synced, state, message
  steps                jsonb NOT NULL DEFAULT '[]',   -- the most recent reconcile steps
  status               jsonb NOT NULL DEFAULT '{}',   -- the whole status as the workflow's query returns it
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

-- A subdomain belongs to exactly one TenantClient (its uid), whatever the environment: the primary
-- key makes the reservation atomic (no check-then-insert race). Reservations outlive
-- deprovisioning, so a deprovisioned tenant's backups can never be confused with a new tenant's.
CREATE TABLE subdomain_reservations (
  subdomain    text PRIMARY KEY CHECK (subdomain ~ '^[a-z0-9-]{1,30}$'),
  owner_uid    uuid NOT NULL,
  reserved_at  timestamptz NOT NULL DEFAULT now()
);

-- Every stored backup file (pg_dump of the tenant database, archive of its filestore) and until
-- when the tier's retention keeps it; the retention schedule deletes expired ones.
CREATE TABLE tenant_backups (
  id          bigserial PRIMARY KEY,
  tenant      text NOT NULL,
  tier        text NOT NULL CHECK (tier IN ('starter', 'pro', 'enterprise')),
  kind        text NOT NULL CHECK (kind IN ('database', 'filestore')),
  path        text NOT NULL UNIQUE,
  size_bytes  bigint NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX tenant_backups_expires_at ON tenant_backups (expires_at);
CREATE INDEX tenant_backups_tenant ON tenant_backups (tenant, created_at);
