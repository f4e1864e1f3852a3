/** Accepting an invitation (public: the link's token is the credential), throttled like a login. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { startSession } from '../../../../domain/access/login-sessions.js';
import { PasswordThrottle } from '../../../../domain/access/login-throttle.js';
import { acceptInvitation } from '../../../../domain/portal/invitation-acceptance.js';
import { PASSWORD_MIN_LENGTH } from '../../../../domain/portal/passwords.js';
import { access } from '../../../plugins/access.js';
import { sendSession } from '../../auth/sessions.js';
import { Acceptance, AcceptedSession, Problem } from './schemas.js';

export function acceptInvitationRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  const throttle = new PasswordThrottle(app.deps.redis, config);

  app.post(
    '/api/portal/team/invitations/accept',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary: "Accept an invitation with its link's token: joins the workspace and logs in",
        description:
          `A new address: \`name\` and \`password\` (at least ${PASSWORD_MIN_LENGTH} characters) create the account. An address that has an account: \`password\` is that account's; ` +
          "an account without a password yet (a workspace owner's, from the welcome e-mail's activation link) chooses it here. " +
          'The answer is a session, as from POST /api/auth/login. 404: not a valid link (or replaced by a re-invite); 409: accepted already; 410: revoked or expired.',
        body: Acceptance,
        response: {
          200: AcceptedSession,
          400: Problem,
          401: Problem,
          404: Problem,
          409: Problem,
          410: Problem,
          429: Problem,
        },
      },
    },
    async (req, reply) => {
      const accepted = await throttle.attempt(
        PasswordThrottle.loginKey(`invitation:${req.body.token}`, req.ip),
        () => acceptInvitation(pool, config.BCRYPT_COST, req.body),
        (seconds) => reply.header('retry-after', seconds),
      );
      const session = await startSession(pool, config, accepted.user);
      req.log.info(
        { workspaceId: accepted.workspace.id, userId: accepted.user.id, accountCreated: accepted.accountCreated },
        'invitation accepted',
      );
      return sendSession(app, reply, session, {
        workspace: { ...accepted.workspace, role: accepted.role },
        accountCreated: accepted.accountCreated,
      });
    },
  );
}
