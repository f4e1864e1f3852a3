-- The tenant ERP user that imports bank statement lines (domain/banking/erp-import.ts): a second
-- dedicated user next to the read-only API user, with Accounting / Bookkeeper rights only, so the
-- dashboards' user stays unable to write. Same shape as tenant_erp_credentials.
CREATE TABLE tenant_erp_bank_import_credentials (
  tenant              text PRIMARY KEY REFERENCES tenants (name) ON DELETE CASCADE,
  login               text NOT NULL,
  password_encrypted  text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);
