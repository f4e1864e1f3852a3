/** The TypeBox schemas of the tenant webhook routes: endpoints, secrets, attempts, replays. */
import { Type } from 'typebox';
import { Text } from '../../../schemas/common.js';
import { WEBHOOK_EVENT_TYPES } from '../../../../domain/webhooks/endpoints.js';

const EventType = Type.String({
  pattern: '^[A-Za-z0-9._-]{1,100}$',
  description: `an event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
});
const EventTypes = Type.Union([Type.Array(EventType, { minItems: 1, maxItems: 50, uniqueItems: true }), Type.Null()], {
  description: 'the event types this endpoint receives; null (default) for every type',
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'https URL (http only where configured); checked again at connect time',
});
export const Endpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Type.String(),
  eventTypes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  failingSince: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export const NewEndpoint = Type.Object(
  {
    url: Url,
    description: Type.Optional(Text({ maxLength: 500 })),
    eventTypes: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const EndpointChange = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Text({ maxLength: 500 })),
    eventTypes: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export const Secrets = Type.Object({
  secret: Type.String({ description: 'whsec_… (Standard Webhooks)' }),
  previousSecret: Type.Union([Type.String(), Type.Null()], {
    description: 'still signing (a second signature) until previousSecretExpiresAt',
  }),
  previousSecretExpiresAt: Type.Union([Type.String(), Type.Null()]),
});
export const Attempt = Type.Object({
  id: Type.String(),
  messageId: Type.String(),
  eventType: Type.Union([Type.String(), Type.Null()], {
    description: "the message's event type (webhook.test for a test send)",
  }),
  attemptedAt: Type.String(),
  trigger: Type.String(),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  durationMs: Type.Integer(),
  outcome: Type.String(),
  error: Type.Union([Type.String(), Type.Null()]),
  responseHeaders: Type.Record(Type.String(), Type.String()),
  responseExcerpt: Type.String(),
});
export const Params = Type.Object({ id: Type.String({ format: 'uuid' }) });
const MessageId = Type.String({
  pattern: '^msg_[A-Za-z0-9_-]{1,96}$',
  description: 'a message id (the webhook-id receivers saw)',
});
export const AttemptsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    messageId: Type.Optional(MessageId),
    before: Type.Optional(Type.String({ format: 'uuid', description: 'attempt id: older than this (paging)' })),
  },
  { additionalProperties: false },
);
/** One message, or the failed messages created in [since, until). */
export const ReplayRequest = Type.Union([
  Type.Object({ messageId: MessageId }, { additionalProperties: false }),
  Type.Object(
    { since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) },
    { additionalProperties: false },
  ),
]);
export const ReplayAnswer = Type.Object({
  replayed: Type.Array(Type.String()),
  inProgress: Type.Array(Type.String()),
  note: Type.Optional(Type.String({ description: 'for a time range: only failed messages are replayed' })),
});
export const errors = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  429: Type.Ref('Problem'),
};
