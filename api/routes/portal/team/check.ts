/**
 * What an activation or invitation link can still do, without using it (public: the link's token
 * names it): the link's page asks before it offers a password form. A POST so the token stays out
 * of addresses and access logs, as with accepting and renewing; it changes nothing.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invitationLinkState } from '../../../../domain/portal/invitation-acceptance.js';
import { Text } from '../../../schemas/common.js';
import { access } from '../../../plugins/access.js';
import { Problem } from './schemas.js';

const LinkStateSchema = Type.Object({
  purpose: Type.Union([Type.Literal('activation'), Type.Literal('team')], {
    description: "activation: an owner's welcome e-mail; team: an invitation from an admin",
  }),
  state: Type.Union(
    [
      Type.Literal('open'),
      Type.Literal('used'),
      Type.Literal('replaced'),
      Type.Literal('revoked'),
      Type.Literal('expired'),
    ],
    {
      description:
        'open: accepting it works; used: accepted already (sign in); replaced: an activation link a newer one replaced; revoked: a team invitation an admin revoked; expired',
    },
  ),
  message: Type.String({ description: "what to tell the link's holder: for a dead link, what to do" }),
  renewable: Type.Boolean({
    description:
      'whether POST /api/portal/team/invitations/renew mails a new link (false for an open link, and for a team invitation revoked or expired: an admin invites again)',
  }),
});

export function checkLinkRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool } = app.deps;

  app.post(
    '/api/portal/team/invitations/check',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary: 'What an activation or invitation link can still do, by its token, without using it',
        description:
          'Changes nothing: the link stays as it was. 404: not a valid link (or replaced by a re-invite). ' +
          'The answer of POST /api/portal/team/invitations/accept for a dead link carries the same `message`.',
        body: Type.Object({ token: Text({ minLength: 20, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: LinkStateSchema, 400: Problem, 404: Problem },
      },
    },
    async (req) => invitationLinkState(pool, req.body.token),
  );
}
