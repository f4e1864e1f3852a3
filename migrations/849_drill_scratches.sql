-- A backup drill's scratch tenant (<tenant>-d<hex>): a `tenants` row and, only while the drill reads
-- the restored dashboards through the ERP, a route. Never the customer's: the ERP jobs
-- (routedTenants) and the drills leave the tenants listed here alone.
CREATE TABLE tenant_drill_scratches (
  name           text PRIMARY KEY,
  source_tenant  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
