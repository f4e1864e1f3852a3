/**
 * One agent execution as the agents service runs it: the call's context (the agent, and the
 * workspace its grant names), the run recorded from start to outcome (succeeded / failed /
 * cancelled), and the answer's body.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import { findAgent, type Agent } from '../../domain/agents/catalog.js';
import type { DataClient } from '../../domain/agents/data-client.js';
import { finishExecution, startExecution } from '../../domain/agents/executions.js';
import {
  AgentFailure,
  ExecutionCancelled,
  newRun,
  runAgent,
  type AgentEvent,
  type AgentRun,
  type ModelConfig,
} from '../../domain/agents/runner.js';
import { WORKSPACE_GRANT_HEADER, type WorkspaceGrants } from '../../domain/agents/workspace-grant.js';

export interface CallContext {
  agent: Agent;
  workspaceId: string;
  grant: string;
  keyPrefix: string | null;
}

export interface Executed {
  executionId: string;
  run: AgentRun;
  latencyMs: number;
}

export interface ExecutionDeps {
  pool: pg.Pool;
  grants: WorkspaceGrants;
  model: ModelConfig;
  data: DataClient;
  maxToolRounds: number;
}

/** The agent and the workspace of a call: the grant must be the account API's, for this workspace. */
export function callContext(grants: WorkspaceGrants, req: FastifyRequest): CallContext {
  const headers = req.headers as Record<string, string | undefined>;
  const workspaceId = headers['x-workspace-id']!;
  const grant = headers[WORKSPACE_GRANT_HEADER]!;
  if (grants.verify(grant) !== workspaceId)
    throw new AppError('FORBIDDEN', 'The workspace grant is missing, expired or for another workspace.');
  const agentId = (req.params as { agentId: string }).agentId;
  const agent = findAgent(agentId);
  if (!agent) throw new AppError('NOT_FOUND', `There is no agent "${agentId}".`);
  return { agent, workspaceId, grant, keyPrefix: headers['x-key-prefix'] ?? null };
}

/** An abort signal that fires when the caller closes the connection before the answer is complete. */
export function callerGone(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller;
}

/** Runs one execution and records it (started, then succeeded / failed / cancelled). */
export async function execute(
  deps: ExecutionDeps,
  ctx: CallContext,
  run: {
    mode: 'chat' | 'stream';
    question: string;
    signal: AbortSignal;
    onEvent?: (e: AgentEvent) => void;
    onStart?: (executionId: string) => void;
  },
): Promise<Executed> {
  const executionId = randomUUID();
  const started = performance.now();
  const { question } = run;
  await startExecution(deps.pool, {
    id: executionId,
    workspaceId: ctx.workspaceId,
    keyPrefix: ctx.keyPrefix,
    agentId: ctx.agent.id,
    mode: run.mode,
    inputChars: question.length,
    model: deps.model.model,
  });
  run.onStart?.(executionId);
  const progress = newRun();
  const finish = (outcome: 'succeeded' | 'failed' | 'cancelled', errorCode: string | null) =>
    finishExecution(deps.pool, executionId, {
      outcome,
      errorCode,
      toolsCalled: progress.toolCalls.map(({ name, ok, ms }) => ({ name, ok, ms })),
      promptTokens: progress.usage.promptTokens,
      completionTokens: progress.usage.completionTokens,
      latencyMs: performance.now() - started,
    });
  try {
    const answered = await runAgent({
      agent: ctx.agent,
      question,
      model: deps.model,
      data: deps.data,
      tool: { workspaceId: ctx.workspaceId, grant: ctx.grant },
      signal: run.signal,
      maxToolRounds: deps.maxToolRounds,
      onEvent: run.onEvent,
      progress,
    });
    await finish('succeeded', null);
    return { executionId, run: answered, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    const cancelled = err instanceof ExecutionCancelled;
    await finish(
      cancelled ? 'cancelled' : 'failed',
      cancelled ? 'caller-gone' : err instanceof AgentFailure ? err.reason : 'internal',
    );
    throw err;
  }
}

/** The answer's body (ChatAnswer; also the stream's `done` event). */
export function answerOf(agent: Agent, r: Executed) {
  const { promptTokens, completionTokens } = r.run.usage;
  return {
    executionId: r.executionId,
    agentId: agent.id,
    answer: r.run.answer,
    toolCalls: r.run.toolCalls,
    usage: {
      promptTokens,
      completionTokens,
      totalTokens:
        promptTokens === null && completionTokens === null ? null : (promptTokens ?? 0) + (completionTokens ?? 0),
    },
    latencyMs: r.latencyMs,
  };
}
