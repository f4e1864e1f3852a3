/**
 * One agent execution: the question goes to the model with the agent's tools; while the model asks
 * for tools, they are called (through the data service) and their results go back; the model's
 * final answer is streamed out delta by delta. The model is any OpenAI-compatible Chat Completions
 * API, through the official `openai` client (locally the stand-in in sandbox/llm). Every call is a
 * streaming call, so that /chat and /chat/stream share one path and an abort (the caller went away)
 * cancels the model's request at once.
 */
import OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { AppError } from '../../lib/errors.js';
import { TOOLS, type Agent, type ToolName } from './catalog.js';
import type { DataClient, ToolContext } from './data-client.js';
import type { ToolCallRecord } from './executions.js';

export interface ModelConfig {
  client: OpenAI;
  model: string;
}

export function createModel(cfg: {
  LLM_URL: string;
  LLM_KEY: string;
  LLM_MODEL: string;
  AGENTS_MODEL_TIMEOUT_MS: number;
}): ModelConfig {
  return {
    client: new OpenAI({
      baseURL: cfg.LLM_URL,
      apiKey: cfg.LLM_KEY,
      timeout: cfg.AGENTS_MODEL_TIMEOUT_MS,
      maxRetries: 1,
    }),
    model: cfg.LLM_MODEL,
  };
}

export type AgentEvent =
  | { type: 'tool_call'; name: string; arguments: Record<string, unknown> }
  | { type: 'tool_result'; name: string; ok: boolean }
  | { type: 'delta'; content: string };

export interface AgentRun {
  answer: string;
  toolCalls: (ToolCallRecord & { arguments: Record<string, unknown> })[];
  usage: { promptTokens: number | null; completionTokens: number | null };
}

/** Thrown when the caller went away: the execution is recorded as cancelled. */
export class ExecutionCancelled extends Error {
  override name = 'ExecutionCancelled';
}

/** What a failed run tells the caller and the record (`code` is the record's error_code). */
export class AgentFailure extends AppError {
  constructor(
    readonly reason: 'model-unavailable' | 'model-error' | 'too-many-tool-rounds',
    code: 'BAD_GATEWAY' | 'UNAVAILABLE' | 'GATEWAY_TIMEOUT',
    detail: string,
  ) {
    super(code, detail);
  }
}

export const newRun = (): AgentRun => ({
  answer: '',
  toolCalls: [],
  usage: { promptTokens: null, completionTokens: null },
});

function parseArguments(raw: string): Record<string, unknown> {
  try {
    const value = JSON.parse(raw || '{}') as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export interface AgentRunOptions {
  agent: Agent;
  question: string;
  model: ModelConfig;
  data: DataClient;
  tool: Omit<ToolContext, 'signal'>;
  signal: AbortSignal;
  maxToolRounds: number;
  onEvent?: (e: AgentEvent) => void;
  /** Filled as the run goes (tools called, tokens), so a failed or cancelled run is recorded with what it did. */
  progress?: AgentRun;
}

/** What the model asked for in one round: its text so far and the tool calls, by index. */
interface ModelTurn {
  content: string;
  calls: Map<number, { id: string; name: string; arguments: string }>;
}

export async function runAgent(opts: AgentRunOptions): Promise<AgentRun> {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: opts.agent.instructions },
    { role: 'user', content: opts.question },
  ];
  const tools = opts.agent.tools.map((t) => TOOLS[t]);
  const run: AgentRun = opts.progress ?? newRun();

  for (let round = 0; ; round++) {
    // the last round offers no tools: the model must answer with what it has
    const offer = round < opts.maxToolRounds ? tools : [];
    const { content, calls } = await modelTurn(opts, messages, offer, run);
    if (calls.size === 0) {
      run.answer = content;
      return run;
    }
    if (offer.length === 0)
      throw new AgentFailure(
        'too-many-tool-rounds',
        'BAD_GATEWAY',
        'The model kept asking for tools without answering.',
      );

    const toolCalls: ChatCompletionMessageToolCall[] = [...calls.values()].map((c, i) => ({
      id: c.id || `call_${round}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: c.arguments || '{}' },
    }));
    messages.push({ role: 'assistant', content: content || null, tool_calls: toolCalls });
    // the tools of one round run side by side
    const results = await Promise.all(toolCalls.map((tc) => callTool(opts, tc)));
    toolCalls.forEach((tc, i) => {
      const r = results[i]!;
      if ('record' in r) run.toolCalls.push(r.record);
      messages.push({ role: 'tool', tool_call_id: tc.id, content: JSON.stringify(r.ok ? r.data : { error: r.error }) });
    });
  }
}

/** One streamed model call: deltas go out as they come, tool calls are put together, usage is added to the run. */
async function modelTurn(
  opts: AgentRunOptions,
  messages: ChatCompletionMessageParam[],
  offer: ChatCompletionTool[],
  run: AgentRun,
): Promise<ModelTurn> {
  const { model, signal } = opts;
  const turn: ModelTurn = { content: '', calls: new Map() };
  try {
    const stream = await model.client.chat.completions.create(
      {
        model: model.model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        ...(offer.length ? { tools: offer, tool_choice: 'auto' as const } : {}),
      },
      { signal },
    );
    for await (const chunk of stream) {
      addUsage(run, chunk.usage);
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        turn.content += delta.content;
        opts.onEvent?.({ type: 'delta', content: delta.content });
      }
      for (const tc of delta.tool_calls ?? []) {
        const call = turn.calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name += tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
        turn.calls.set(tc.index, call);
      }
    }
    // the openai client ends an aborted stream quietly, as if the answer were complete
    if (signal.aborted) throw new ExecutionCancelled('the caller went away');
  } catch (err) {
    throw modelFailure(err, signal);
  }
  return turn;
}

/** What a failed model call means for the run (cancelled, or a failure the caller is told about). */
function modelFailure(err: unknown, signal: AbortSignal): unknown {
  if (err instanceof ExecutionCancelled) return err;
  if (signal.aborted || err instanceof OpenAI.APIUserAbortError) return new ExecutionCancelled('the caller went away');
  if (err instanceof OpenAI.APIConnectionTimeoutError)
    return new AgentFailure('model-unavailable', 'GATEWAY_TIMEOUT', 'The model did not answer in time.');
  if (err instanceof OpenAI.APIConnectionError)
    return new AgentFailure(
      'model-unavailable',
      'UNAVAILABLE',
      'The model cannot be reached right now; retry shortly.',
    );
  if (err instanceof OpenAI.APIError)
    return new AgentFailure(
      'model-error',
      'BAD_GATEWAY',
      `The model refused the request (HTTP ${err.status ?? 'error'}).`,
    );
  return err;
}

function addUsage(run: AgentRun, u: { prompt_tokens: number; completion_tokens: number } | null | undefined) {
  if (!u) return;
  run.usage.promptTokens = (run.usage.promptTokens ?? 0) + u.prompt_tokens;
  run.usage.completionTokens = (run.usage.completionTokens ?? 0) + u.completion_tokens;
}

/** Calls one tool the model asked for (through the data service; only the agent's own tools). */
async function callTool(opts: AgentRunOptions, tc: ChatCompletionMessageToolCall) {
  const { agent, signal } = opts;
  if (tc.type !== 'function') return { ok: false as const, error: 'Unknown tool call.', status: 400 };
  const name = tc.function.name;
  const args = parseArguments(tc.function.arguments);
  opts.onEvent?.({ type: 'tool_call', name, arguments: args });
  const started = performance.now();
  const allowed = (agent.tools as string[]).includes(name);
  const result = allowed
    ? await opts.data.call(name as ToolName, args, { ...opts.tool, signal })
    : { ok: false as const, status: 400, error: `This agent has no tool named ${name}.` };
  if (signal.aborted) throw new ExecutionCancelled('the caller went away');
  opts.onEvent?.({ type: 'tool_result', name, ok: result.ok });
  return { ...result, record: { name, arguments: args, ok: result.ok, ms: Math.round(performance.now() - started) } };
}
