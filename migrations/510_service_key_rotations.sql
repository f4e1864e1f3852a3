-- Service-key rotations (issue 10): one row per rotation workflow `rotate:<caller>:<target>:<n>`.
-- The row numbers a pair's rotations (n), is the per-pair lock (at most one unfinished rotation per
-- pair: a partial unique index, so a second start is refused with 409), and keeps what the workflow's
-- steps did so each step is idempotent keyed by the rotation (the new key id and secret version are
-- written in the same transaction that registers the key). Key ids and versions only: never a key.
CREATE TABLE service_key_rotations (
  workflow_id   text PRIMARY KEY,
  caller        text NOT NULL,
  target        text NOT NULL,
  n             integer NOT NULL CHECK (n >= 1),
  reason        text NOT NULL CHECK (reason IN ('annual', 'exposure', 'manual')),
  old_key_id    text,
  old_version   integer,
  new_key_id    text,
  new_version   integer,
  started_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz,
  -- completed | rolled-back | abandoned (the workflow ended without finishing: terminated, failed)
  outcome       text CHECK (outcome IN ('completed', 'rolled-back', 'abandoned')),
  -- why it rolled back or was abandoned, and the alert raised (the CloudEvent id, or why none went out)
  message       text,
  alert         text,
  UNIQUE (caller, target, n),
  CHECK ((finished_at IS NULL) = (outcome IS NULL))
);
CREATE UNIQUE INDEX service_key_rotations_one_open ON service_key_rotations (caller, target) WHERE finished_at IS NULL;
