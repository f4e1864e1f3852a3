/**
 * Ops API: the service keys (issue 10): every caller → target pair of the inventory, its keys'
 * ids, states, creation, promotion and revocation times, and last use as the targets recorded it.
 * Never a key or a hash.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { serviceKeyPairs } from '../../../domain/service-keys/operations.js';

const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const KeyView = Type.Object({
  keyId: Type.String({ pattern: '^sk_[0-9a-f]{8}$' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('current'), Type.Literal('previous'), Type.Literal('revoked')]),
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
  keys: Type.Array(KeyView),
});

export default async function opsServiceKeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/ops/service-keys',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Service keys: caller → target pairs, key ids, states and last use (never a key)',
        response: { 200: Type.Object({ pairs: Type.Array(PairView) }), 401: Type.Ref('Problem') },
      },
    },
    async () => {
      const pairs = await serviceKeyPairs(app.deps.pool);
      const iso = (d: Date | null) => (d ? d.toISOString() : null);
      return {
        pairs: pairs.map((p) => ({
          ...p,
          keys: p.keys.map((k) => ({ ...k, createdAt: k.createdAt.toISOString(), promotedAt: iso(k.promotedAt), revokedAt: iso(k.revokedAt), lastUsedAt: iso(k.lastUsedAt) })),
        })),
      };
    },
  );
}
