-- Restores in place: a backup restored into the tenant itself (its database and filestore folder
-- replaced, after a safety backup of what they held). Recorded with the restored copies, so one
-- restore of a tenant at a time (tenant_restores_one_at_a_time) holds for both kinds. For an
-- in-place restore `name` is the restore's staging name (<tenant>-p<hex>, a reserved subdomain the
-- backup is restored into before the switch), not a tenant: the name no longer refers to `tenants`.
ALTER TABLE tenant_restores DROP CONSTRAINT tenant_restores_name_fkey;
ALTER TABLE tenant_restores
  ADD COLUMN mode text NOT NULL DEFAULT 'copy' CHECK (mode IN ('copy', 'in-place')),
  ADD COLUMN safety_backup_id text;
