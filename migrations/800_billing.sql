-- Billing (issue 12): each workspace's subscription as the payment provider (Stripe) last told
-- us, its invoices, the provider events already processed (replay protection by event id), and
-- the legacy callbacks the tenant ERPs' SaaS endpoints receive.

CREATE TABLE subscriptions (
  workspace_id              uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  tier                      text NOT NULL CHECK (tier IN ('starter', 'pro', 'enterprise')),
  -- Stripe's subscription statuses
  status                    text NOT NULL CHECK (status IN ('trialing', 'active', 'past_due', 'unpaid', 'canceled', 'incomplete', 'incomplete_expired', 'paused')),
  seats                     integer NOT NULL DEFAULT 1 CHECK (seats >= 0),
  current_period_start      timestamptz,
  current_period_end        timestamptz,
  cancel_at_period_end      boolean NOT NULL DEFAULT false,
  provider_customer_id      text UNIQUE,
  provider_subscription_id  text UNIQUE,
  -- the recurring price (smallest currency unit per seat): the next invoice's estimate
  unit_amount               bigint CHECK (unit_amount >= 0),
  currency                  text CHECK (currency ~ '^[a-z]{3}$'),
  -- dunning: when the current run of failed payments began (NULL: paid up), how many dunning runs
  -- there have been (numbers the workflow ids dunning:<workspace>:<n>) and when the grace ran out
  past_due_since            timestamptz,
  dunning_count             integer NOT NULL DEFAULT 0,
  suspended_at              timestamptz,
  -- Stripe's `created` of the last subscription event applied: an older one arriving late is ignored
  provider_updated_at       timestamptz,
  updated_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE invoices (
  id                    text PRIMARY KEY,                 -- the provider's invoice id (in_…)
  workspace_id          uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  number                text,
  status                text NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'uncollectible', 'void')),
  currency              text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
  amount_due            bigint NOT NULL,
  amount_paid           bigint NOT NULL DEFAULT 0,
  amount_remaining      bigint NOT NULL DEFAULT 0,
  period_start          timestamptz,
  period_end            timestamptz,
  hosted_invoice_url    text,
  invoice_pdf           text,
  attempt_count         integer NOT NULL DEFAULT 0,
  next_payment_attempt  timestamptz,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invoices_workspace ON invoices (workspace_id, created_at DESC, id DESC);

-- Every provider event processed, once: the primary key makes a repeated delivery a no-op.
CREATE TABLE billing_events (
  id            text PRIMARY KEY,                          -- Stripe's event id (evt_…)
  type          text NOT NULL,
  workspace_id  uuid REFERENCES workspaces (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL,                      -- the event's own time
  processed_at  timestamptz NOT NULL DEFAULT now(),
  outcome       text NOT NULL
);

-- The tenant ERPs' legacy callbacks (/svc/saas/job/<id>/update, /svc/saas/backup/callback).
CREATE TABLE saas_jobs (
  tenant      text NOT NULL,
  job_id      text NOT NULL CHECK (job_id ~ '^[A-Za-z0-9_.:-]{1,100}$'),
  state       text NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
  progress    integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
  message     text NOT NULL DEFAULT '',
  updates     integer NOT NULL DEFAULT 1,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, job_id)
);

CREATE TABLE saas_backup_callbacks (
  tenant       text NOT NULL,
  backup_id    text NOT NULL CHECK (backup_id ~ '^[A-Za-z0-9_.:-]{1,100}$'),
  status       text NOT NULL CHECK (status IN ('done', 'failed')),
  size_bytes   bigint CHECK (size_bytes >= 0),
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, backup_id)
);
