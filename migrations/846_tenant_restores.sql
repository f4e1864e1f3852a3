-- Restores of a tenant's backup as a new, separate tenant (a staging copy with its own database,
-- filestore folder, route and host), each run by the workflow `restore:<name>`. The copy says which
-- backup it came from; it is torn down at `expires_at` unless kept. One restore of a tenant at a
-- time: a second while one is still restoring is refused (the partial unique index).
CREATE TABLE tenant_restores (
  name            text PRIMARY KEY REFERENCES tenants (name),
  source_tenant   text NOT NULL,
  backup_id       text NOT NULL,
  host            text NOT NULL,
  state           text NOT NULL DEFAULT 'restoring'
                    CHECK (state IN ('restoring', 'ready', 'failed', 'torn-down')),
  keep            boolean NOT NULL DEFAULT false,
  expires_at      timestamptz,
  error           text,
  requested_at    timestamptz NOT NULL DEFAULT now(),
  restored_at     timestamptz,
  torn_down_at    timestamptz
);
CREATE UNIQUE INDEX tenant_restores_one_at_a_time ON tenant_restores (source_tenant) WHERE state = 'restoring';
