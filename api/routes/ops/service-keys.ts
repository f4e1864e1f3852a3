/**
 * Ops API: the service keys: every caller → target pair of the inventory, its keys'
 * ids, states, creation, promotion and revocation times, and last use as the targets recorded it.
 * Never a key or a hash.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { serviceKeyPairs } from '../../../domain/service-keys/overview.js';
import { rotationSettings, startRotation } from '../../../domain/service-keys/rotation.js';
import { temporalUiLink } from '../../../lib/temporal.js';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const KeyView = Type.Object({
  keyId: Type.String({ pattern: '^sk_[0-9a-f]{8}$' }),
  state: Type.Union([
    Type.Literal('pending'),
    Type.Literal('current'),
    Type.Literal('previous'),
    Type.Literal('revoked'),
  ]),
  createdAt: Type.String({ format: 'date-time' }),
  promotedAt: Timestamp,
  revokedAt: Timestamp,
  lastUsedAt: Timestamp,
  useCount: Type.Integer({ minimum: 0 }),
});
const PairView = Type.Object({
  caller: Type.String(),
  target: Type.String(),
  live: Type.Boolean(),
  what: Type.String(),
  proof: Type.Union([Type.Literal('calls'), Type.Literal('holders'), Type.Literal('per-run'), Type.Literal('rules')], {
    description:
      "how a rotation proves the consumer switched: calls (its own calls use the new key, the old one silent), holders (its processes report the key they hold; the old key silent), per-run (a command that reads the store on every run; the old key silent), rules (the rotation rewrites every tenant ERP's rules to the new key's tokens and none may be left on the old one; the old key silent)",
  }),
  keys: Type.Array(KeyView),
  rotation: Type.Object({
    running: Type.Union([Type.String(), Type.Null()], { description: 'the workflow id of the rotation running now' }),
    last: Type.Union([
      Type.Object({
        workflowId: Type.String(),
        outcome: Type.String(),
        finishedAt: Type.String({ format: 'date-time' }),
      }),
      Type.Null(),
    ]),
    next: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: "the pair's schedule's next rotation",
    }),
  }),
});

const operator = { access: access.service('operator') };
const Name = Type.String({ pattern: '^[a-z][a-z0-9-]{0,39}$' });
const RotationRequest = Type.Optional(
  Type.Object(
    { reason: Type.Optional(Type.Union([Type.Literal('annual'), Type.Literal('exposure')])) },
    { additionalProperties: false },
  ),
);
const RotationStarted = Type.Object({
  caller: Type.String(),
  target: Type.String(),
  n: Type.Integer(),
  reason: Type.String(),
  workflowId: Type.String(),
  runId: Type.String(),
  temporalUiUrl: Type.String(),
});

export default async function opsServiceKeyRoutes(fastify: FastifyInstance) {
  pairsRoute(fastify);
  rotateRoute(fastify);
}

/** The pairs with their keys and rotations, dates as RFC 3339 strings. */
function pairsRoute(fastify: FastifyInstance) {
  const { pool, temporal } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/ops/service-keys',
    {
      config: operator,
      schema: {
        tags: ['ops'],
        summary:
          'Service keys: caller → target pairs, key ids, states, last use, the running and next rotation (never a key)',
        response: { 200: Type.Object({ pairs: Type.Array(PairView) }), 401: Type.Ref('Problem') },
      },
    },
    async () => {
      const pairs = await serviceKeyPairs(pool, temporal);
      const iso = (d: Date | null) => (d ? d.toISOString() : null);
      return {
        pairs: pairs.map((p) => ({
          ...p,
          keys: p.keys.map((k) => ({
            ...k,
            createdAt: k.createdAt.toISOString(),
            promotedAt: iso(k.promotedAt),
            revokedAt: iso(k.revokedAt),
            lastUsedAt: iso(k.lastUsedAt),
          })),
          rotation: {
            running: p.rotation.running,
            last: p.rotation.last && { ...p.rotation.last, finishedAt: p.rotation.last.finishedAt.toISOString() },
            next: iso(p.rotation.next),
          },
        })),
      };
    },
  );
}

function rotateRoute(fastify: FastifyInstance) {
  const { config, pool, temporal } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/ops/service-keys/:caller/:target/rotate',
    {
      config: operator,
      schema: {
        tags: ['ops'],
        summary: 'Rotate a service key (workflow rotate:<caller>:<target>:<n>); one rotation of a pair at a time (409)',
        params: Type.Object({ caller: Name, target: Name }),
        body: RotationRequest,
        response: {
          202: RotationStarted,
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const started = await startRotation(
        { pool, temporal, taskQueue: config.TEMPORAL_TASK_QUEUE, settings: rotationSettings(config) },
        req.params,
        req.body?.reason ?? 'manual',
      );
      req.log.info({ workflowId: started.workflowId, reason: started.reason }, 'service-key rotation started');
      return reply.code(202).send({ ...started, temporalUiUrl: temporalUiLink(config, started.workflowId) });
    },
  );
}
