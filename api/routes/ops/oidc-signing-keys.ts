/**
 * Ops API: the platform OpenID provider's signing keys (the ones the tenants' ERPs verify ID tokens
 * with): the published keys' ids and states, and a rotation. A rotation makes a new key that signs
 * from then on; the previous one stays published for its grace period, so an ERP holding a token or
 * a JWKS from before keeps verifying. The auth service takes the new key set within
 * SIGNING_KEYS_REFRESH_MS, without a restart. Never a key.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import {
  publishedSigningKeys,
  rotateSigningKey,
  RETIRED_KEY_GRACE_MS,
  SIGNING_KEYS_REFRESH_MS,
} from '../../../domain/identity/signing-keys.js';

/** How soon the auth service signs with a new key. */
const IN_USE_WITHIN_SECONDS = SIGNING_KEYS_REFRESH_MS / 1000;

const PublishedKey = Type.Object({
  kid: Type.String(),
  state: Type.Union([Type.Literal('signing'), Type.Literal('retired')]),
  createdAt: Type.String({ format: 'date-time' }),
  unpublishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when a retired key leaves the JWKS',
  }),
});
const Keys = Type.Object({ keys: Type.Array(PublishedKey, { description: 'the signing key first' }) });
const operator = { access: access.service('operator') };

export default async function opsOidcSigningKeyRoutes(fastify: FastifyInstance) {
  const { config, pool } = fastify.deps;
  const api = fastify.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/api/ops/oidc-provider/signing-keys',
    {
      config: operator,
      schema: {
        tags: ['ops'],
        summary: "The OpenID provider's published signing keys: ids and states (never a key)",
        response: { 200: Keys, 401: Type.Ref('Problem') },
      },
    },
    async () => ({ keys: await publishedSigningKeys(pool) }),
  );
  api.post(
    '/api/ops/oidc-provider/signing-keys/rotate',
    {
      config: operator,
      schema: {
        tags: ['ops'],
        summary: `Rotate the OpenID provider's signing key: a new key signs within ${IN_USE_WITHIN_SECONDS} s; the previous one stays published for ${RETIRED_KEY_GRACE_MS / 3_600_000} h`,
        response: {
          201: Type.Object({
            kid: Type.String({ description: 'the new signing key' }),
            inUseWithinSeconds: Type.Integer(),
            keys: Keys.properties.keys,
          }),
          401: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const kid = await rotateSigningKey(pool, config.SECRETS_KEY);
      req.log.info({ kid }, 'oidc provider signing key rotated');
      return reply
        .code(201)
        .send({ kid, inUseWithinSeconds: IN_USE_WITHIN_SECONDS, keys: await publishedSigningKeys(pool) });
    },
  );
}
