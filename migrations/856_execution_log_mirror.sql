-- The execution log's mirror to the log store (domain/access/execution-log-mirror.ts). Each row
-- carries the id of the transaction that wrote it (one per COPY batch); the mirror ships rows in
-- (xid, id) order up to the oldest transaction still running, so no row can commit behind its
-- cursor. The cursor is one row, locked by the replica that ships.
ALTER TABLE execution_log ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX execution_log_xid_idx ON execution_log (xid, id);

CREATE TABLE execution_log_mirror_cursor (
  one       boolean PRIMARY KEY DEFAULT true CHECK (one),
  xid       xid8 NOT NULL,
  id        bigint NOT NULL,
  -- when the cursor last moved
  moved_at  timestamptz NOT NULL DEFAULT now()
);
-- from the first row: the rows written before this migration are shipped too
INSERT INTO execution_log_mirror_cursor (xid, id) VALUES ('0', 0);
