/** The events service's keyed routes: publish, consumer groups, the stream's state, the service's status. */
import { Type } from 'typebox';
import type { Redis } from 'ioredis';
import { AppError } from '../../lib/errors.js';
import { cloudEventProblems, type CloudEvent } from '../../domain/events/events.js';
import type { KeyedRoutes } from '../service-routes.js';
import type { EventPublisher } from './publisher.js';
import { streamState, StreamInfoSchema } from './stream-state.js';

const GroupName = Type.String({ pattern: '^[\\w.:-]{1,100}$', description: 'consumer group name' });
const StreamId = { pattern: '^(\\$|0|\\d+(-\\d+)?)$' };
const PublishedSchema = Type.Object({ streamId: Type.String(), duplicate: Type.Boolean() });

export interface StreamRoutesDeps {
  redis: Redis;
  stream: string;
  maxLen: number;
  publisher: EventPublisher;
  startedAt: number;
}

export function registerStreamRoutes(v1: KeyedRoutes, deps: StreamRoutesDeps): void {
  registerPublish(v1, deps.publisher);
  registerGroupCreation(v1, deps);
  v1.get('/api/v1/events/info', { schema: { response: { 200: StreamInfoSchema } } }, async () =>
    streamState(deps.redis, deps.stream, deps.maxLen),
  );
  registerStatus(v1, deps);
}

function registerPublish(v1: KeyedRoutes, publisher: EventPublisher) {
  v1.post(
    '/api/v1/events',
    {
      schema: {
        // validated by cloudEventProblems below: one clear reason per problem
        body: Type.Unknown(),
        response: { 202: PublishedSchema },
      },
    },
    async (req, reply) => {
      const problems = cloudEventProblems(req.body);
      if (problems.length > 0) {
        throw new AppError('BAD_REQUEST', `Not a valid CloudEvents 1.0 envelope: ${problems.join('; ')}.`, {
          errors: problems,
        });
      }
      const event = req.body as CloudEvent;
      const { streamId, duplicate } = await publisher.append(event);
      req.log.info({ eventId: event.id, type: event.type, streamId, duplicate }, 'event published');
      return reply.code(202).send({ streamId, duplicate });
    },
  );
}

function registerGroupCreation(v1: KeyedRoutes, deps: StreamRoutesDeps) {
  v1.post(
    '/api/v1/events/groups/:group',
    {
      schema: {
        params: Type.Object({ group: GroupName }),
        querystring: Type.Object(
          {
            startId: Type.Optional(
              Type.String({
                ...StreamId,
                description:
                  '"$" (default): only events published from now on; "0": every event the stream still holds',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ stream: Type.String(), group: Type.String(), created: Type.Literal(false) }),
          201: Type.Object({
            stream: Type.String(),
            group: Type.String(),
            created: Type.Literal(true),
            startId: Type.String(),
          }),
        },
      },
    },
    async (req, reply) => {
      const { group } = req.params;
      const startId = req.query.startId ?? '$';
      try {
        await deps.redis.xgroup('CREATE', deps.stream, group, startId, 'MKSTREAM');
      } catch (err) {
        if ((err as Error).message.startsWith('BUSYGROUP')) {
          return reply.code(200).send({ stream: deps.stream, group, created: false as const });
        }
        throw err;
      }
      req.log.info({ group, startId }, 'consumer group created');
      return reply.code(201).send({ stream: deps.stream, group, created: true as const, startId });
    },
  );
}

function registerStatus(v1: KeyedRoutes, deps: StreamRoutesDeps) {
  v1.get(
    '/api/v1/status',
    {
      schema: {
        response: {
          200: Type.Object({
            service: Type.Literal('events'),
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            stream: Type.String(),
            maxLen: Type.Integer(),
            uptimeSeconds: Type.Integer(),
            redis: Type.String(),
          }),
        },
      },
    },
    async () => {
      let redis = 'ok';
      try {
        await deps.redis.ping();
      } catch (err) {
        redis = `unreachable: ${(err as Error).message}`;
      }
      return {
        service: 'events' as const,
        status: redis === 'ok' ? ('ok' as const) : ('degraded' as const),
        stream: deps.stream,
        maxLen: deps.maxLen,
        uptimeSeconds: Math.floor((Date.now() - deps.startedAt) / 1000),
        redis,
      };
    },
  );
}
