-- The API user's Odoo API key (Odoo 19+: JSON-2 takes only keys), made by the user itself in a web
-- session (domain/erp/api-user.ts), sealed with SECRETS_KEY like the password, with the expiry the
-- ERP gave it (renewed when less than 30 days remain).
ALTER TABLE tenant_erp_credentials
  ADD COLUMN api_key_encrypted  text,
  ADD COLUMN api_key_expires_at timestamptz,
  ADD CONSTRAINT tenant_erp_credentials_api_key_complete CHECK ((api_key_encrypted IS NULL) = (api_key_expires_at IS NULL));
