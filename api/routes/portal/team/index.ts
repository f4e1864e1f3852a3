/**
 * The team (specification §4.1 `GET /api/portal/team`, `POST /api/portal/team/invite`): members
 * see who is in the workspace; admins also see open invitations, invite (admin or member),
 * re-invite and revoke, change a member's role and remove a member (never the last admin: 409;
 * a removed member's sessions end at once, domain/portal/team.ts). Accepting (and checking or renewing a link) is public: the token of the e-mailed link is the credential.
 * A workspace key can do none of this (403, §5.2 rule 2).
 */
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import { memberRoutes } from './members.js';
import { invitationRoutes } from './invitations.js';
import { acceptInvitationRoute } from './accept.js';
import { renewLinkRoute } from './renew.js';
import { checkLinkRoute } from './check.js';

export default async function teamRoutes(fastify: FastifyInstance) {
  await fastify.register(cookie);
  memberRoutes(fastify);
  invitationRoutes(fastify);
  acceptInvitationRoute(fastify);
  renewLinkRoute(fastify);
  checkLinkRoute(fastify);
}
