-- Agent executions (issue 11, §4.4 GET /agents/{agent_id}/executions): one row per chat call,
-- written "running" when it starts and completed once when it ends. What is kept: who (workspace,
-- key prefix), which agent, how big the question was (characters), the tools called (name, ok,
-- milliseconds; not their arguments or results), tokens, latency, outcome. What is NOT kept: the
-- question and the answer (free text a customer may fill with personal or confidential data),
-- tool results (the workspace's figures) and any key.
CREATE TABLE agent_executions (
  id                uuid PRIMARY KEY,
  workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  key_prefix        text,
  agent_id          text NOT NULL,
  mode              text NOT NULL CHECK (mode IN ('chat', 'stream')),
  input_chars       integer NOT NULL CHECK (input_chars >= 0),
  tools_called      jsonb NOT NULL DEFAULT '[]',
  model             text NOT NULL,
  prompt_tokens     integer,
  completion_tokens integer,
  outcome           text NOT NULL DEFAULT 'running' CHECK (outcome IN ('running', 'succeeded', 'failed', 'cancelled')),
  error_code        text,
  latency_ms        integer,
  started_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at       timestamptz
);
CREATE INDEX agent_executions_newest ON agent_executions (workspace_id, agent_id, started_at DESC, id DESC);
