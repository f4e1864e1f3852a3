-- Every write of a TenantClient's row (its spec, or the status the lifecycle workflow mirrors) is
-- announced on channel tenant_client_writes with the row's name, so the TenantClient controller
-- reconciles that object at once instead of polling every row.
CREATE OR REPLACE FUNCTION notify_tenant_client_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tenant_client_writes', NEW.name);
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS tenant_client_writes ON tenant_clients;
CREATE TRIGGER tenant_client_writes AFTER INSERT OR UPDATE ON tenant_clients
  FOR EACH ROW EXECUTE FUNCTION notify_tenant_client_write();
