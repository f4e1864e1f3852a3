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
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type pg from 'pg';
import { registerProbes } from '../../lib/http.js';
import { buildServiceApp } from '../../lib/service-app.js';
import { AppError, problem } from '../../lib/errors.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { AgentParams, ChatAnswer, ChatBody, serviceProblemResponses } from '../../domain/agents/schemas.js';
import type { DataClient } from '../../domain/agents/data-client.js';
import { ExecutionPageSchema, listExecutions } from '../../domain/agents/executions.js';
import { ExecutionCancelled, type AgentEvent, type ModelConfig } from '../../domain/agents/runner.js';
import { WORKSPACE_GRANT_HEADER, type WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { registerKeyedRoutes } from '../service-routes.js';
import { answerOf, callContext, callerGone, execute } from './executions.js';
import type { DestinationStream } from 'pino';

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
  const app = await buildServiceApp(deps.logLevel, { service: 'agents', logStream: deps.logStream });
  registerProbes(app as unknown as FastifyInstance, { name: 'postgres', ping: () => deps.pool.query('SELECT 1') });
  await registerKeyedRoutes(app, deps.serviceKeys, { callers: AGENTS_CALLERS }, (agents) => {
    agents.post(
      '/agents/:agentId/chat',
      { schema: { headers: Headers, params: AgentParams, body: ChatBody, response: { 200: ChatAnswer, ...errors } } },
      async (req, reply) => {
        const ctx = callContext(deps.grants, req);
        const gone = callerGone(reply);
        return answerOf(
          ctx.agent,
          await execute(deps, ctx, { mode: 'chat', question: req.body.message, signal: gone.signal }),
        );
      },
    );
    agents.post(
      '/agents/:agentId/chat/stream',
      { schema: { headers: Headers, params: AgentParams, body: ChatBody } },
      async (req, reply) => streamChat(deps, req, reply, req.body.message),
    );
    agents.get(
      '/agents/:agentId/executions',
      {
        schema: {
          headers: Headers,
          params: AgentParams,
          querystring: ExecutionsQuery,
          response: { 200: ExecutionPageSchema, ...errors },
        },
      },
      async (req) => {
        const ctx = callContext(deps.grants, req);
        return listExecutions(deps.pool, {
          workspaceId: ctx.workspaceId,
          agentId: ctx.agent.id,
          limit: req.query.limit,
          cursor: req.query.cursor,
        });
      },
    );
  });
  return app;
}

/** The chat as Server-Sent Events; the record exists before the first byte goes out. */
async function streamChat(deps: AgentsDeps, req: FastifyRequest, reply: FastifyReply, question: string) {
  const ctx = callContext(deps.grants, req);
  const gone = callerGone(reply);
  const out = new PassThrough();
  const write = (event: string, data: unknown) => {
    if (!out.destroyed) out.write(sse(event, data));
  };
  reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no');
  // a failure before the stream began is a plain problem answer
  let begun = false;
  const done = execute(deps, ctx, {
    mode: 'stream',
    question,
    signal: gone.signal,
    onEvent: (e) => write(e.type, eventData(e)),
    onStart: (executionId) => {
      begun = true;
      void reply.send(out);
      write('execution', { executionId, agentId: ctx.agent.id });
    },
  });
  try {
    const result = await done;
    write('done', answerOf(ctx.agent, result));
  } catch (err) {
    if (!begun) throw err;
    if (err instanceof ExecutionCancelled)
      req.log.info({ agentId: ctx.agent.id }, 'agent execution cancelled: the caller went away');
    else {
      const body =
        err instanceof AppError
          ? problem(err.code, err.message)
          : problem('INTERNAL', 'The agent failed. Quote the requestId when reporting it.');
      if (!(err instanceof AppError)) req.log.error({ err }, 'agent execution failed');
      write('error', { ...body, requestId: req.id });
    }
  }
  out.end();
  return reply;
}

/** The data of a run's event on the stream. */
const eventData = (e: AgentEvent) =>
  e.type === 'delta'
    ? { content: e.content }
    : { name: e.name, ...(e.type === 'tool_call' ? { arguments: e.arguments } : { ok: e.ok }) };
