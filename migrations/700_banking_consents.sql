-- PSD2 consents a workspace holds at a bank (services/banking). The bank's Consent-ID is the
-- credential that reads the accounts: kept sealed with SECRETS_KEY (lib/secret-box.ts), never listed
-- or logged. `id` is what the workspace sees.
CREATE TABLE banking_consents (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  bank_id              text NOT NULL,
  bank_consent_sealed  text NOT NULL,
  status               text NOT NULL CHECK (status IN ('received', 'valid', 'rejected', 'revokedByPsu', 'expired', 'terminatedByTpp')),
  access               jsonb NOT NULL,
  recurring_indicator  boolean NOT NULL,
  valid_until          date NOT NULL,
  frequency_per_day    integer NOT NULL CHECK (frequency_per_day > 0),
  -- the SCA redirect the PSU completes (it names the bank's authorisation, not the consent)
  sca_redirect         text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX banking_consents_workspace_bank_idx ON banking_consents (workspace_id, bank_id, created_at DESC);
