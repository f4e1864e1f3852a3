/** "Send me a new link" from the page of a dead activation or invitation link (public: the old link's token names it). */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { renewLink } from '../../../../domain/portal/activation.js';
import { Text } from '../../../schemas/common.js';
import { access } from '../../../plugins/access.js';
import { passwordLinkLimits } from '../../auth/password-link-limits.js';
import { Problem } from './schemas.js';

const DAY_MS = 86_400_000;

export function renewLinkRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  const spendPasswordLink = passwordLinkLimits(fastify);

  app.post(
    '/api/portal/team/invitations/renew',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary: "Send a new link in place of a used, expired or replaced one (by the old link's token)",
        description:
          "The new link goes to the old link's own address: an owner's activation link not used yet gets a new activation link " +
          '(valid ACTIVATION_LINK_TTL_DAYS, 7 days; the old one dies); a used link, whose account has its password now, gets a password link. ' +
          '404: never a link; 409: the link still works; 410: a team invitation that expired or was revoked (an admin invites again). ' +
          'Limited like POST /api/auth/password/forgot (429 with Retry-After).',
        body: Type.Object({ token: Text({ minLength: 20, maxLength: 200 }) }, { additionalProperties: false }),
        response: {
          202: Type.Object({ message: Type.String() }),
          400: Problem,
          404: Problem,
          409: Problem,
          410: Problem,
          429: Problem,
          502: Problem,
          503: Problem,
        },
      },
    },
    async (req, reply) => {
      await spendPasswordLink(`link:${req.body.token}`, req.ip, reply);
      await renewLink(
        {
          pool,
          mail: fastify.portalMail,
          activation: { publicUrl: config.API_PUBLIC_URL, ttlMs: config.ACTIVATION_LINK_TTL_DAYS * DAY_MS },
          passwordReset: { publicUrl: config.API_PUBLIC_URL, ttlMs: config.PASSWORD_RESET_TTL },
        },
        req.body.token,
      );
      return reply
        .code(202)
        .send({ message: 'A new link is on its way to the address the old one was sent to. It works once.' });
    },
  );
}
