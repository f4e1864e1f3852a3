/**
 * The agents service (§4.4; port 8000, AGENTS_PORT): agents answer questions about a workspace's
 * business by calling tools that read its ERP figures through the data service.
 *
 *   POST /agents/:agentId/chat          { message } → { executionId, answer, toolCalls, usage, latencyMs }
 *   POST /agents/:agentId/chat/stream   the same as Server-Sent Events: `execution`, `tool_call`,
 *                                       `tool_result`, `delta` (pieces of the answer), then `done`
 *                                       (or `error` with a problem body)
 *   GET  /agents/:agentId/executions    ?limit=&cursor= newest first
 *   GET  /healthz, /readyz
 *
 * Its only caller is the account API (`X-API-Key`, pair account-api → agents), which names the
 * workspace (`X-Workspace-Id`) with the grant it signed for it (`X-Workspace-Grant`) and the
 * prefix of the workspace key that made the call (`X-Key-Prefix`, for the record). When the caller
 * goes away, the model call is aborted and the execution is recorded as cancelled.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type pg from 'pg';
import { problemDetails, registerProbes, serverOptions } from '../../lib/http.js';
import type { DestinationStream } from 'pino';
import { AppError, problem } from '../../lib/errors.js';
import { registerServiceKeyCheck, requireServiceKey, type ServiceKeyCheck } from '../../domain/service-keys/service-keys.js';
import { findAgent, type Agent } from '../../domain/agents/catalog.js';
import { AgentParams, ChatAnswer, ChatBody, serviceProblemResponses } from '../../domain/agents/schemas.js';
import type { DataClient } from '../../domain/agents/data-client.js';
import { ExecutionPageSchema, finishExecution, listExecutions, startExecution } from '../../domain/agents/executions.js';
import { AgentFailure, ExecutionCancelled, newRun, runAgent, type AgentEvent, type AgentRun, type ModelConfig } from '../../domain/agents/runner.js';
import { WORKSPACE_GRANT_HEADER, type WorkspaceGrants } from '../../domain/agents/workspace-grant.js';

export const AGENTS_TARGET = 'agents';
export const AGENTS_CALLERS = ['account-api'] as const;

export interface AgentsDeps {
  pool: pg.Pool;
  serviceKeys: ServiceKeyCheck;
  grants: WorkspaceGrants;
  model: ModelConfig;
  data: DataClient;
  maxToolRounds: number;
  logLevel?: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

const errors = serviceProblemResponses;

export const ExecutionsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' })),
});

const Headers = Type.Object({
  'x-workspace-id': Type.String({ format: 'uuid' }),
  [WORKSPACE_GRANT_HEADER]: Type.String({ minLength: 1, maxLength: 300 }),
  'x-key-prefix': Type.Optional(Type.String({ pattern: '^ws_live_[A-Z2-7]{8}$' })),
});

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export async function buildAgentsApp(deps: AgentsDeps): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(deps.logLevel ?? 'info', { stream: deps.logStream })).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(problemDetails);

  registerProbes(app as unknown as FastifyInstance, { name: 'postgres', ping: () => deps.pool.query('SELECT 1') });

  /** The agent and the workspace of a call: the grant must be the account API's, for this workspace. */
  function callContext(req: FastifyRequest) {
    const headers = req.headers as Record<string, string | undefined>;
    const workspaceId = headers['x-workspace-id']!;
    const grant = headers[WORKSPACE_GRANT_HEADER]!;
    if (deps.grants.verify(grant) !== workspaceId) throw new AppError('FORBIDDEN', 'The workspace grant is missing, expired or for another workspace.');
    const agentId = (req.params as { agentId: string }).agentId;
    const agent = findAgent(agentId);
    if (!agent) throw new AppError('NOT_FOUND', `There is no agent "${agentId}".`);
    return { agent, workspaceId, grant, keyPrefix: headers['x-key-prefix'] ?? null };
  }

  /** An abort signal that fires when the caller closes the connection before the answer is complete. */
  function callerGone(reply: FastifyReply): AbortController {
    const controller = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) controller.abort();
    });
    return controller;
  }

  /** Runs one execution and records it (started, then succeeded / failed / cancelled). */
  async function execute(
    ctx: ReturnType<typeof callContext>,
    mode: 'chat' | 'stream',
    question: string,
    signal: AbortSignal,
    onEvent?: (e: AgentEvent) => void,
    onStart?: (executionId: string) => void,
  ): Promise<{ executionId: string; run: AgentRun; latencyMs: number }> {
    const executionId = randomUUID();
    const started = performance.now();
    await startExecution(deps.pool, { id: executionId, workspaceId: ctx.workspaceId, keyPrefix: ctx.keyPrefix, agentId: ctx.agent.id, mode, inputChars: question.length, model: deps.model.model });
    onStart?.(executionId);
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
      const run = await runAgent({
        agent: ctx.agent,
        question,
        model: deps.model,
        data: deps.data,
        tool: { workspaceId: ctx.workspaceId, grant: ctx.grant },
        signal,
        maxToolRounds: deps.maxToolRounds,
        onEvent,
        progress,
      });
      await finish('succeeded', null);
      return { executionId, run, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const cancelled = err instanceof ExecutionCancelled;
      await finish(cancelled ? 'cancelled' : 'failed', cancelled ? 'caller-gone' : err instanceof AgentFailure ? err.reason : 'internal');
      throw err;
    }
  }

  const answerOf = (agent: Agent, r: { executionId: string; run: AgentRun; latencyMs: number }) => {
    const { promptTokens, completionTokens } = r.run.usage;
    return {
      executionId: r.executionId,
      agentId: agent.id,
      answer: r.run.answer,
      toolCalls: r.run.toolCalls,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens === null && completionTokens === null ? null : (promptTokens ?? 0) + (completionTokens ?? 0) },
      latencyMs: r.latencyMs,
    };
  };

  // consumers report the key they hold here (a rotation's switch proof, domain/service-keys/holders.ts)
  registerServiceKeyCheck(app as unknown as FastifyInstance, deps.serviceKeys);
  await app.register(async (instance) => {
    const agents = instance.withTypeProvider<TypeBoxTypeProvider>();
    agents.addHook('onRequest', requireServiceKey(deps.serviceKeys, AGENTS_CALLERS));

    agents.post('/agents/:agentId/chat', { schema: { headers: Headers, params: AgentParams, body: ChatBody, response: { 200: ChatAnswer, ...errors } } }, async (req, reply) => {
      const ctx = callContext(req);
      const gone = callerGone(reply);
      return answerOf(ctx.agent, await execute(ctx, 'chat', req.body.message, gone.signal));
    });

    agents.post('/agents/:agentId/chat/stream', { schema: { headers: Headers, params: AgentParams, body: ChatBody } }, async (req, reply) => {
      const ctx = callContext(req);
      const gone = callerGone(reply);
      const out = new PassThrough();
      const write = (event: string, data: unknown) => {
        if (!out.destroyed) out.write(sse(event, data));
      };
      reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
      // the record exists before the first byte goes out; a failure before that is a plain problem answer
      let begun = false;
      const done = execute(ctx, 'stream', req.body.message, gone.signal, (e) => write(e.type, e.type === 'delta' ? { content: e.content } : { name: e.name, ...(e.type === 'tool_call' ? { arguments: e.arguments } : { ok: e.ok }) }), (executionId) => {
        begun = true;
        void reply.send(out);
        write('execution', { executionId, agentId: ctx.agent.id });
      });
      try {
        const result = await done;
        write('done', answerOf(ctx.agent, result));
      } catch (err) {
        if (!begun) throw err;
        if (err instanceof ExecutionCancelled) req.log.info({ agentId: ctx.agent.id }, 'agent execution cancelled: the caller went away');
        else {
          const body = err instanceof AppError ? problem(err.code, err.message) : problem('INTERNAL', 'The agent failed. Quote the requestId when reporting it.');
          if (!(err instanceof AppError)) req.log.error({ err }, 'agent execution failed');
          write('error', { ...body, requestId: req.id });
        }
      }
      out.end();
      return reply;
    });

    agents.get('/agents/:agentId/executions', { schema: { headers: Headers, params: AgentParams, querystring: ExecutionsQuery, response: { 200: ExecutionPageSchema, ...errors } } }, async (req) => {
      const ctx = callContext(req);
      return listExecutions(deps.pool, { workspaceId: ctx.workspaceId, agentId: ctx.agent.id, limit: req.query.limit, cursor: req.query.cursor });
    });
  });
  return app;
}
