/**
 * The events service (specification §4.3, §6): accepts CloudEvents 1.0 envelopes and appends
 * them to a Redis stream with bounded trimming; manages consumer groups; reports the stream's
 * state. Every route but the probes needs `X-API-Key`.
 *
 * A publish is idempotent per CloudEvent `source` + `id` (the CloudEvents identity of an event):
 * one Lua script checks the remembered id, appends and remembers the new stream id atomically,
 * so a retried publish gets the first stream id back and is not appended twice.
 */
import { createHash } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Redis } from 'ioredis';
import { jsonParser, problemDetails, registerProbes, serverOptions } from '../../lib/http.js';
import type { DestinationStream } from 'pino';
import { registerServiceKeyCheck, requireServiceKey, type ServiceCallerIdentity, type ServiceKeyCheck } from '../../domain/service-keys/service-keys.js';
import { AppError } from '../../lib/errors.js';
import { cloudEventProblems, EVENT_FIELD, type CloudEvent } from '../../domain/events/events.js';
import { ERP_EVENT_TYPES, erpCloudEvent, odooChange, presentedToken, type OdooWebhookPayload } from '../../domain/webhooks/ingestion.js';

export interface EventsDeps {
  redis: Redis;
  /** The service-key check of this target (domain/service-keys/verifier.ts): every registered caller may call. */
  serviceKeys: ServiceKeyCheck;
  stream: string;
  /** Approximate number of entries the stream keeps (XADD MAXLEN ~). */
  maxLen: number;
  /** How long a published event's identity is remembered for de-duplication (seconds). */
  dedupeTtlSeconds: number;
  logLevel?: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
  /**
   * Event ingestion from the tenant ERPs (domain/webhooks/ingestion.ts): the check of a tenant's
   * token (made from a key of the `erp → event-ingestion` pair the registry accepts:
   * IngestionKeyRing) and a tenant's workspace slug.
   */
  ingestion?: {
    /** The caller and key id when `token` is the tenant's under an accepted key; undefined otherwise. */
    authenticate(tenant: string, token: string): Promise<ServiceCallerIdentity | undefined>;
    workspaceOf(tenant: string): Promise<string | null | undefined>;
    /** Records the event as seen, so the catch-up sweep (domain/webhooks/erp-sweep.ts) does not publish it again. */
    seen?(tenant: string, eventId: string): Promise<unknown>;
  };
}

/** KEYS: stream, dedupe key. ARGV: maxlen, ttl, id, type, envelope. Returns [streamId, duplicate]. */
const PUBLISH_SCRIPT = `
local seen = redis.call('GET', KEYS[2])
if seen then return {seen, 1} end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'id', ARGV[3], 'type', ARGV[4], '${EVENT_FIELD}', ARGV[5])
redis.call('SET', KEYS[2], id, 'EX', ARGV[2])
return {id, 0}
`;

const GroupName = Type.String({ pattern: '^[\\w.:-]{1,100}$', description: 'consumer group name' });
const StreamId = { pattern: '^(\\$|0|\\d+(-\\d+)?)$' };

/** Accepted content types: CloudEvents structured mode, and plain JSON. */
const JSON_TYPES = ['application/cloudevents+json', 'application/json'];

type XInfo = (string | number | null | XInfo)[];
const asRecord = (flat: XInfo): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
};

export async function buildEventsApp(deps: EventsDeps): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(deps.logLevel ?? 'info', { stream: deps.logStream })).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(problemDetails);
  // Only JSON bodies: without the default text/plain parser, any other type is answered 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, jsonParser(app as unknown as FastifyInstance));

  const startedAt = Date.now();
  const dedupeKey = (ev: CloudEvent) =>
    `${deps.stream}:dedupe:${createHash('sha256').update(`${ev.source}\n${ev.id}`).digest('hex')}`;

  registerProbes(app as unknown as FastifyInstance, { name: 'redis', ping: () => deps.redis.ping() });
  registerServiceKeyCheck(app as unknown as FastifyInstance, deps.serviceKeys);

  /** Appends an event once per source + id; answers [streamId, duplicate]. */
  const append = async (event: CloudEvent) =>
    (await deps.redis.eval(PUBLISH_SCRIPT, 2, deps.stream, dedupeKey(event), deps.maxLen, deps.dedupeTtlSeconds, event.id, event.type, JSON.stringify(event))) as [string, number];

  const ingestion = deps.ingestion;
  if (ingestion) {
    // What Odoo's automation rules post (domain/erp/event-rules.ts): the tenant's token as Basic
    // auth, the event type in the path, `_model`, `_id` and the rule's fields in the body. Odoo
    // waits 1 s for the answer and never retries: this only checks, appends and answers.
    app.post(
      '/api/v1/ingest/odoo/:tenant/:type',
      {
        schema: {
          params: Type.Object({
            tenant: Type.String({ pattern: '^[a-z0-9-]{1,30}$' }),
            type: Type.Union(ERP_EVENT_TYPES.map((t) => Type.Literal(t))),
          }),
          body: Type.Object(
            { _model: Type.String({ minLength: 1, maxLength: 100 }), _id: Type.Integer({ minimum: 1 }), _action: Type.Optional(Type.String({ maxLength: 300 })) },
            { additionalProperties: true, maxProperties: 60 },
          ),
          response: { 202: Type.Object({ streamId: Type.String(), duplicate: Type.Boolean() }) },
        },
      },
      async (req, reply) => {
        const { tenant, type } = req.params;
        const token = presentedToken(req.headers.authorization);
        const who = token ? await ingestion.authenticate(tenant, token) : undefined;
        if (!who) {
          throw new AppError('UNAUTHORIZED', "This endpoint needs the tenant's ingestion token (Basic auth: the userinfo of the rule's URL).");
        }
        const change = odooChange(type, req.body as OdooWebhookPayload);
        if (typeof change === 'string') throw new AppError('BAD_REQUEST', `Not a ${type} change: ${change}.`);
        const workspace = await ingestion.workspaceOf(tenant);
        if (workspace === undefined) throw new AppError('NOT_FOUND', `No tenant "${tenant}".`);
        const [streamId, duplicate] = await append(erpCloudEvent(tenant, workspace, change));
        // (a failure here only means the sweep publishes it again: the stream de-duplicates it)
        await ingestion.seen?.(tenant, change.id).catch((err: Error) => req.log.warn({ tenant, eventId: change.id, err: err.message }, 'ERP event not recorded as seen'));
        req.log.info({ tenant, type, eventId: change.id, streamId, duplicate: duplicate === 1, serviceCaller: who.caller, keyId: who.keyId }, 'ERP event ingested');
        return reply.code(202).send({ streamId, duplicate: duplicate === 1 });
      },
    );
  }

  await app.register(async (instance) => {
    const v1 = instance.withTypeProvider<TypeBoxTypeProvider>();
    v1.addHook('onRequest', requireServiceKey(deps.serviceKeys));

    v1.post(
      '/api/v1/events',
      {
        schema: {
          // validated by cloudEventProblems below: one clear reason per problem
          body: Type.Unknown(),
          response: { 202: Type.Object({ streamId: Type.String(), duplicate: Type.Boolean() }) },
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
        const [streamId, duplicate] = await append(event);
        req.log.info({ eventId: event.id, type: event.type, streamId, duplicate: duplicate === 1 }, 'event published');
        return reply.code(202).send({ streamId, duplicate: duplicate === 1 });
      },
    );

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
                  description: '"$" (default): only events published from now on; "0": every event the stream still holds',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Type.Object({ stream: Type.String(), group: Type.String(), created: Type.Literal(false) }),
            201: Type.Object({ stream: Type.String(), group: Type.String(), created: Type.Literal(true), startId: Type.String() }),
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

    v1.get(
      '/api/v1/events/info',
      {
        schema: {
          response: {
            200: Type.Object({
              stream: Type.String(),
              length: Type.Integer(),
              maxLen: Type.Integer(),
              firstId: Type.Union([Type.String(), Type.Null()]),
              lastId: Type.Union([Type.String(), Type.Null()]),
              entriesAdded: Type.Integer(),
              groups: Type.Array(
                Type.Object({
                  name: Type.String(),
                  lastDeliveredId: Type.String(),
                  pending: Type.Integer(),
                  lag: Type.Union([Type.Integer(), Type.Null()], {
                    description: 'entries not yet delivered to the group; null when Redis cannot tell (after deletions)',
                  }),
                  consumers: Type.Array(
                    Type.Object({ name: Type.String(), pending: Type.Integer(), idleMs: Type.Integer() }),
                  ),
                }),
              ),
            }),
          },
        },
      },
      async () => {
        const empty = { stream: deps.stream, length: 0, maxLen: deps.maxLen, firstId: null, lastId: null, entriesAdded: 0, groups: [] };
        const exists = await deps.redis.exists(deps.stream);
        if (!exists) return empty;
        const info = asRecord((await deps.redis.xinfo('STREAM', deps.stream)) as XInfo);
        const first = info['first-entry'] as XInfo | null;
        const last = info['last-entry'] as XInfo | null;
        const rawGroups = (await deps.redis.xinfo('GROUPS', deps.stream)) as XInfo[];
        const groups = await Promise.all(
          rawGroups.map(async (raw) => {
            const g = asRecord(raw);
            const name = String(g.name);
            const consumers = ((await deps.redis.xinfo('CONSUMERS', deps.stream, name)) as XInfo[]).map((c) => {
              const r = asRecord(c);
              return { name: String(r.name), pending: Number(r.pending), idleMs: Number(r.idle) };
            });
            return {
              name,
              lastDeliveredId: String(g['last-delivered-id']),
              pending: Number(g.pending),
              lag: g.lag === null || g.lag === undefined ? null : Number(g.lag),
              consumers,
            };
          }),
        );
        return {
          ...empty,
          length: Number(info.length),
          firstId: first ? String(first[0]) : null,
          lastId: last ? String(last[0]) : null,
          entriesAdded: Number(info['entries-added'] ?? 0),
          groups,
        };
      },
    );

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
          uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
          redis,
        };
      },
    );
  });

  return app;
}
