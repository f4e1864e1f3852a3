-- A tenant's status has one source, its lifecycle workflow; this table is where the workflow
-- publishes it (recordTenantStatus, its only writer): for `get tenants`, the portal, the platform's
-- own checks and the TenantClient controller, which writes it back to the object's status. The
-- desired spec lives on the TenantClient object alone: `spec` and `generation` here are the ones the
-- workflow accepted, and `uid` is the TenantClient object's.
ALTER TABLE tenant_clients RENAME TO tenant_status;
ALTER TABLE tenant_status ALTER COLUMN uid DROP DEFAULT;
ALTER TABLE tenant_status ALTER COLUMN generation DROP DEFAULT;

-- Every write is announced on channel tenant_status_writes with the tenant's name, so the
-- TenantClient controller reconciles that object at once instead of polling.
DROP TRIGGER IF EXISTS tenant_client_writes ON tenant_status;
DROP FUNCTION IF EXISTS notify_tenant_client_write();
CREATE FUNCTION notify_tenant_status_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tenant_status_writes', NEW.name);
  RETURN NULL;
END
$$;
CREATE TRIGGER tenant_status_writes AFTER INSERT OR UPDATE ON tenant_status
  FOR EACH ROW EXECUTE FUNCTION notify_tenant_status_write();
