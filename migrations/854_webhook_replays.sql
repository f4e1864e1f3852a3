-- A replayed delivery goes back on its endpoint's retry schedule (due at once) with the whole
-- schedule ahead of it: `replayed_from` is its attempt count when it was last replayed (null: never
-- replayed). The attempt made when attempts = replayed_from is the replay itself.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS replayed_from int;
