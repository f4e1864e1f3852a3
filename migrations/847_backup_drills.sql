-- What a backup held when it was taken (record counts of the main models, in the dump's own
-- snapshot; the filestore's files and sizes), and the drills that restore the latest backup into a
-- scratch tenant and compare: last drill, outcome, duration per tenant.
CREATE TABLE tenant_backup_figures (
  backup_id   text PRIMARY KEY,
  tenant      text NOT NULL,
  figures     jsonb NOT NULL
);

CREATE TABLE tenant_backup_drills (
  id           bigserial PRIMARY KEY,
  tenant       text NOT NULL,
  backup_id    text,
  outcome      text NOT NULL CHECK (outcome IN ('passed', 'mismatch', 'failed')),
  mismatches   jsonb NOT NULL DEFAULT '[]',
  error        text,
  started_at   timestamptz NOT NULL,
  finished_at  timestamptz NOT NULL DEFAULT now(),
  duration_ms  integer NOT NULL
);
CREATE INDEX tenant_backup_drills_tenant ON tenant_backup_drills (tenant, finished_at DESC);
