/**
 * The record of every agent execution (migrations/710_agent_executions.sql): inserted "running"
 * when the call starts, completed once when it ends, listed newest first with a keyset cursor.
 * Never the question, the answer, tool results or keys (see the migration for why).
 */
import type pg from 'pg';
import { Type, type Static } from 'typebox';
import { AppError } from '../../lib/errors.js';

export const Outcome = Type.Union([
  Type.Literal('running'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('cancelled'),
]);
export type Outcome = Static<typeof Outcome>;

export const ToolCallRecord = Type.Object({
  name: Type.String(),
  ok: Type.Boolean({ description: 'Whether the tool returned figures (false: the data service refused or failed)' }),
  ms: Type.Integer({ description: 'How long the tool took' }),
});
export type ToolCallRecord = Static<typeof ToolCallRecord>;

export const ExecutionSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    agentId: Type.String(),
    keyPrefix: Type.Union([Type.String(), Type.Null()], {
      description: 'Look-up prefix of the workspace key that made the call (never the key)',
    }),
    mode: Type.Union([Type.Literal('chat'), Type.Literal('stream')]),
    inputChars: Type.Integer({ description: 'Length of the question in characters (the text itself is not kept)' }),
    toolsCalled: Type.Array(ToolCallRecord),
    model: Type.String(),
    tokens: Type.Object({
      prompt: Type.Union([Type.Integer(), Type.Null()]),
      completion: Type.Union([Type.Integer(), Type.Null()]),
      total: Type.Union([Type.Integer(), Type.Null()]),
    }),
    outcome: Outcome,
    errorCode: Type.Union([Type.String(), Type.Null()]),
    latencyMs: Type.Union([Type.Integer(), Type.Null()]),
    startedAt: Type.String({ format: 'date-time' }),
    finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { description: 'One agent execution' },
);
export type Execution = Static<typeof ExecutionSchema>;

export const ExecutionPageSchema = Type.Object({
  items: Type.Array(ExecutionSchema, { description: 'Newest first' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as ?cursor= for the next (older) page; null on the last page',
  }),
});
export type ExecutionPage = Static<typeof ExecutionPageSchema>;

export interface NewExecution {
  id: string;
  workspaceId: string;
  keyPrefix: string | null;
  agentId: string;
  mode: 'chat' | 'stream';
  inputChars: number;
  model: string;
}

export interface ExecutionResult {
  outcome: Exclude<Outcome, 'running'>;
  toolsCalled: ToolCallRecord[];
  promptTokens: number | null;
  completionTokens: number | null;
  errorCode: string | null;
  latencyMs: number;
}

export async function startExecution(pool: pg.Pool, e: NewExecution): Promise<void> {
  await pool.query(
    `INSERT INTO agent_executions (id, workspace_id, key_prefix, agent_id, mode, input_chars, model) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [e.id, e.workspaceId, e.keyPrefix, e.agentId, e.mode, e.inputChars, e.model],
  );
}

export async function finishExecution(pool: pg.Pool, id: string, r: ExecutionResult): Promise<void> {
  await pool.query(
    `UPDATE agent_executions
        SET outcome = $2, tools_called = $3, prompt_tokens = $4, completion_tokens = $5, error_code = $6, latency_ms = $7, finished_at = clock_timestamp()
      WHERE id = $1 AND outcome = 'running'`,
    [
      id,
      r.outcome,
      JSON.stringify(r.toolsCalled),
      r.promptTokens,
      r.completionTokens,
      r.errorCode,
      Math.round(r.latencyMs),
    ],
  );
}

interface Row {
  id: string;
  agent_id: string;
  key_prefix: string | null;
  mode: 'chat' | 'stream';
  input_chars: number;
  tools_called: ToolCallRecord[];
  model: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  outcome: Outcome;
  error_code: string | null;
  latency_ms: number | null;
  started_at: Date;
  finished_at: Date | null;
  /** started_at with microseconds, for the cursor (a JS Date keeps milliseconds only). */
  started_key: string;
}

const encodeCursor = (r: Row) => Buffer.from(`${r.started_key}|${r.id}`).toString('base64url');
function decodeCursor(cursor: string): [string, string] {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!at || !id || !/^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/.test(at) || !/^[0-9a-f-]{36}$/.test(id)) {
    throw new AppError('BAD_REQUEST', 'cursor is not one this endpoint returned.');
  }
  return [at, id];
}

/** One page of a workspace's executions of one agent, newest first. */
export async function listExecutions(
  pool: pg.Pool,
  q: { workspaceId: string; agentId: string; limit: number; cursor?: string },
): Promise<ExecutionPage> {
  const after = q.cursor ? decodeCursor(q.cursor) : null;
  const { rows } = await pool.query<Row>(
    `SELECT id, agent_id, key_prefix, mode, input_chars, tools_called, model, prompt_tokens, completion_tokens, outcome, error_code,
            latency_ms, started_at, finished_at,
            to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS started_key
       FROM agent_executions
      WHERE workspace_id = $1 AND agent_id = $2
        AND ($3::timestamptz IS NULL OR (started_at, id) < ($3::timestamptz, $4::uuid))
      ORDER BY started_at DESC, id DESC
      LIMIT $5`,
    [q.workspaceId, q.agentId, after?.[0] ?? null, after?.[1] ?? null, q.limit + 1],
  );
  const page = rows.slice(0, q.limit);
  return {
    items: page.map((r) => ({
      id: r.id,
      agentId: r.agent_id,
      keyPrefix: r.key_prefix,
      mode: r.mode,
      inputChars: r.input_chars,
      toolsCalled: r.tools_called,
      model: r.model,
      tokens: {
        prompt: r.prompt_tokens,
        completion: r.completion_tokens,
        total:
          r.prompt_tokens === null && r.completion_tokens === null
            ? null
            : (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0),
      },
      outcome: r.outcome,
      errorCode: r.error_code,
      latencyMs: r.latency_ms,
      startedAt: r.started_at.toISOString(),
      finishedAt: r.finished_at?.toISOString() ?? null,
    })),
    nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!) : null,
  };
}
