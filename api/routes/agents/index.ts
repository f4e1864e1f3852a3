/**
 * The agent endpoints of the Workspace API (specification §4.1, §5.3, §8), in front of the agents
 * service (services/agents):
 *
 *   POST /api/agents/:agentId/chat            scope agents:invoke; 10 per minute per key
 *   POST /api/agents/:agentId/chat/stream     the same, as Server-Sent Events passed on chunk by
 *                                             chunk; a caller that goes away aborts the upstream
 *                                             request, and with it the model call
 *   GET  /api/agents/:agentId/executions      scope agents:invoke: the workspace's executions
 *   GET  /api/portal/agents/:agentId/executions  the same for workspace admins logged in
 *
 * Key verification, the token bucket, the per-minute agent limit (POST with agents:invoke; 429 with
 * Retry-After and RateLimit-*) and the execution log come from api/plugins/workspace-auth.ts.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { createAgentsClient, problemOf, type AgentsCall } from '../../../domain/agents/agents-client.js';
import { ExecutionPageSchema } from '../../../domain/agents/executions.js';
import { WorkspaceGrants } from '../../../domain/agents/workspace-grant.js';
import { serviceKeyFor } from '../../../domain/service-keys/secret-store.js';
import { AgentParams, ChatAnswer, ChatBody } from '../../../domain/agents/schemas.js';
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const upstreamErrors = { 502: Type.Ref('Problem'), 503: Type.Ref('Problem'), 504: Type.Ref('Problem') };
const ExecutionsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Text({ maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' })),
});

const AdminExecutionsQuery = Type.Object({
  ...ExecutionsQuery.properties,
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
});
const invoke = { access: access.key('agents:invoke') };
type AgentsClient = ReturnType<typeof createAgentsClient>;

/** One event of the stream (the schema of each event, as OpenAPI 3.2's `itemSchema` would say). */
const SseEvent = Type.Object(
  {
    event: Type.Union(['execution', 'tool_call', 'tool_result', 'delta', 'done', 'error'].map((e) => Type.Literal(e))),
    data: Type.String({
      description:
        'JSON: execution {executionId, agentId}; tool_call {name, arguments}; tool_result {name, ok}; delta {content}; done (the /chat answer); error (a problem)',
    }),
  },
  { description: 'One Server-Sent Event' },
);

/** Aborts when the caller closes the connection before the answer is complete. */
function abortWhenGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A call to the agents service on behalf of the request's workspace key. */
function keyCall(
  req: { workspace: { id: string } | null; apiKey: { prefix: string } | null; id: string },
  extra: Partial<AgentsCall> = {},
): AgentsCall {
  return {
    workspaceId: req.workspace!.id,
    keyPrefix: req.apiKey!.prefix,
    requestId: req.id,
    ...extra,
  };
}

export default async function agentRoutes(fastify: FastifyInstance) {
  const { config } = fastify.deps;
  const agents = createAgentsClient({
    baseUrl: config.AGENTS_URL,
    key: serviceKeyFor(fastify.serviceKeySecrets, 'account-api', 'agents'),
    grants: new WorkspaceGrants(config.SECRETS_KEY),
  });
  chatRoute(fastify, agents);
  chatStreamRoute(fastify, agents);
  executionsRoute(fastify, agents);
  adminExecutionsRoute(fastify, agents);
}

function chatRoute(fastify: FastifyInstance, agents: AgentsClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/agents/:agentId/chat',
    {
      config: invoke,
      schema: {
        tags: ['agents'],
        summary:
          "Ask an agent a question about the workspace's business; it answers from the ERP figures it reads with its tools",
        params: AgentParams,
        body: ChatBody,
        response: { 200: ChatAnswer, ...upstreamErrors },
      },
    },
    async (req, reply) => {
      const res = await agents.call(
        'POST',
        `/agents/${req.params.agentId}/chat`,
        keyCall(req, { body: req.body, signal: abortWhenGone(reply) }),
      );
      if (!res.ok) throw await problemOf(res);
      return res.json();
    },
  );
}

function chatStreamRoute(fastify: FastifyInstance, agents: AgentsClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/agents/:agentId/chat/stream',
    {
      config: invoke,
      schema: {
        tags: ['agents'],
        summary:
          'The same as /chat, streamed as Server-Sent Events: execution, tool_call, tool_result, delta…, then done (or error)',
        params: AgentParams,
        body: ChatBody,
        response: {
          200: {
            description: 'A stream of Server-Sent Events',
            content: { 'text/event-stream': { schema: SseEvent } },
          },
          ...upstreamErrors,
        },
      },
    },
    async (req, reply) => {
      const res = await agents.call(
        'POST',
        `/agents/${req.params.agentId}/chat/stream`,
        keyCall(req, { body: req.body, signal: abortWhenGone(reply) }),
      );
      if (!res.ok || !res.body) throw await problemOf(res);
      // passed on as it comes (no buffering here, and none in a proxy that honours X-Accel-Buffering);
      // when the caller goes away Fastify destroys this stream, which cancels the upstream response
      reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no');
      return reply.send(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>));
    },
  );
}

function executionsRoute(fastify: FastifyInstance, agents: AgentsClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/agents/:agentId/executions',
    {
      config: invoke,
      schema: {
        tags: ['agents'],
        summary:
          "The workspace's executions of an agent, newest first (who, tools, tokens, latency, outcome; never the question)",
        params: AgentParams,
        querystring: ExecutionsQuery,
        response: { 200: ExecutionPageSchema, ...upstreamErrors },
      },
    },
    async (req) => {
      const res = await agents.call(
        'GET',
        `/agents/${req.params.agentId}/executions`,
        keyCall(req, { query: { limit: req.query.limit, cursor: req.query.cursor } }),
      );
      if (!res.ok) throw await problemOf(res);
      return res.json();
    },
  );
}

function adminExecutionsRoute(fastify: FastifyInstance, agents: AgentsClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/portal/agents/:agentId/executions',
    {
      config: { access: access.admin },
      schema: {
        tags: ['agents'],
        summary: "For workspace admins (logged in): the workspace's executions of an agent, newest first",
        params: AgentParams,
        querystring: AdminExecutionsQuery,
        response: { 200: ExecutionPageSchema, ...upstreamErrors },
      },
    },
    async (req) => {
      const call = {
        workspaceId: req.adminWorkspace!.id,
        requestId: req.id,
        query: { limit: req.query.limit, cursor: req.query.cursor },
      };
      const res = await agents.call('GET', `/agents/${req.params.agentId}/executions`, call);
      if (!res.ok) throw await problemOf(res);
      return res.json();
    },
  );
}
