-- Workspace API limits a customer cannot multiply by making keys (§8 "Workspace API requests",
-- without "per key"): per-workspace overrides of the workspace-wide bucket (shared by all its
-- keys) and of the cap on live keys. NULL: the configured default.
ALTER TABLE workspace_rate_limits
  ADD COLUMN workspace_burst       integer          CHECK (workspace_burst > 0),
  ADD COLUMN workspace_per_second  double precision CHECK (workspace_per_second > 0),
  ADD COLUMN max_api_keys          integer          CHECK (max_api_keys > 0);
