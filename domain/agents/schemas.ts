/** The shapes of an agent call, shared by the agents service and the account API routes in front of it. */
import { Type } from 'typebox';
import { AGENT_ID_PATTERN } from './catalog.js';

export const ChatBody = Type.Object(
  {
    message: Type.String({
      minLength: 1,
      maxLength: 4000,
      pattern: '\\S',
      description: 'The question, in plain words',
    }),
  },
  { additionalProperties: false },
);
export const ChatAnswer = Type.Object({
  executionId: Type.String({ format: 'uuid' }),
  agentId: Type.String(),
  answer: Type.String(),
  toolCalls: Type.Array(
    Type.Object({
      name: Type.String(),
      arguments: Type.Record(Type.String(), Type.Unknown()),
      ok: Type.Boolean(),
      ms: Type.Integer(),
    }),
  ),
  usage: Type.Object({
    promptTokens: Type.Union([Type.Integer(), Type.Null()]),
    completionTokens: Type.Union([Type.Integer(), Type.Null()]),
    totalTokens: Type.Union([Type.Integer(), Type.Null()]),
  }),
  latencyMs: Type.Integer(),
});
export const AgentParams = Type.Object({
  agentId: Type.String({
    pattern: AGENT_ID_PATTERN,
    description: 'An agent id, e.g. finance or collections',
    examples: ['finance', 'collections'],
  }),
});

/** The problem answers of the agents and data services (RFC 9457 bodies, lib/http.ts). */
const ServiceProblem = Type.Object(
  { type: Type.String(), title: Type.String(), status: Type.Integer(), detail: Type.String() },
  { additionalProperties: true },
);
export const serviceProblemResponses = {
  400: ServiceProblem,
  401: ServiceProblem,
  403: ServiceProblem,
  404: ServiceProblem,
  502: ServiceProblem,
  503: ServiceProblem,
  504: ServiceProblem,
};
