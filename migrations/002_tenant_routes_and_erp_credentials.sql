-- The local route driver: tenant hostname -> tenant database, in namespace plana-odoo-<erpVersion>.
-- The ERP stand-in (sandbox/erp) honours it: a Host without a route gets 404.
CREATE TABLE tenant_routes (
  host        text PRIMARY KEY,                 -- tenant hostname, e.g. demo.erp.plana.test
  tenant      text NOT NULL UNIQUE REFERENCES tenants (name) ON DELETE CASCADE,
  namespace   text NOT NULL CHECK (namespace ~ '^plana-odoo-(17|18|19)$'),
  database    text NOT NULL,                    -- the tenant database (= host)
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The dedicated ERP API user of each tenant (specification §5.5); the password is encrypted with
-- SECRETS_KEY (lib/secret-box.ts) and only ever decrypted to call the tenant's XML-RPC.
CREATE TABLE tenant_erp_credentials (
  tenant              text PRIMARY KEY REFERENCES tenants (name) ON DELETE CASCADE,
  login               text NOT NULL,
  password_encrypted  text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);
