-- Backups kept in the object store (BACKUP_S3_*): `path` holds the object's key, `sha256` its digest
-- (checked on every read) and `backup_id` the backup (one run: database dump + filestore archive)
-- the object belongs to; both objects of a backup are recorded together once both are stored.
-- Rows written before keep storage 'local' (a file in the worker's BACKUP_ROOT).
ALTER TABLE tenant_backups
  ADD COLUMN storage text NOT NULL DEFAULT 'local' CHECK (storage IN ('local', 'object-store')),
  ADD COLUMN sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  ADD COLUMN backup_id text;
CREATE INDEX tenant_backups_backup_id ON tenant_backups (backup_id);
