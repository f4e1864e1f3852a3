-- ERP events the platform has seen (domain/webhooks/erp-sweep.ts): each post of a tenant ERP's
-- automation rules (via 'odoo'), each event the catch-up sweep published ('sweep'), and what a
-- tenant's first sweep found already there ('baseline'). Kept: it decides what the sweep publishes.
CREATE TABLE erp_events_seen (
  tenant    text NOT NULL,
  event_id  text NOT NULL,
  via       text NOT NULL CHECK (via IN ('odoo', 'sweep', 'baseline')),
  seen_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, event_id)
);

-- Per tenant: where the next sweep reads from (records written since, less an overlap).
CREATE TABLE erp_event_sweeps (
  tenant      text PRIMARY KEY,
  swept_from  timestamptz NOT NULL,
  swept_at    timestamptz NOT NULL DEFAULT now(),
  published   bigint NOT NULL DEFAULT 0,
  last_error  text
);
