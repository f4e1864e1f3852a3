/**
 * A forgotten password (domain/portal/password-resets.ts): ask for a link by e-mail, then choose a
 * new password with the link's token, which signs in and ends every other session.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { startSession } from '../../../domain/access/login-sessions.js';
import { requestPasswordReset, resetPassword } from '../../../domain/portal/password-resets.js';
import { PASSWORD_MIN_LENGTH } from '../../../domain/portal/passwords.js';
import { EmailAddress, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';
import { passwordLinkLimits } from './password-link-limits.js';
import { SessionSchema, sendSession } from './sessions.js';

const Problem = Type.Ref('Problem');
export const LINK_ON_ITS_WAY =
  'If an account uses this address, an e-mail with a link to choose a new password is on its way. The link works once, for a short while.';

export default async function passwordRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  const spendPasswordLink = passwordLinkLimits(fastify);

  app.post(
    '/api/auth/password/forgot',
    {
      config: { access: access.public },
      schema: {
        tags: ['auth'],
        summary: 'Forgot your password: mails a single-use link to choose a new one',
        description:
          'Always 202 with the same message, whether or not an account has the address (the e-mail is sent after the answer), ' +
          'so the answer says nothing about which addresses have accounts. The link works once, for PASSWORD_RESET_TTL (1 hour); a newer one replaces it. ' +
          'At most PASSWORD_LINKS_PER_ADDRESS_PER_HOUR (5) per address and PASSWORD_LINKS_PER_CLIENT_PER_HOUR (20) per client address: 429 with Retry-After.',
        body: Type.Object({ email: EmailAddress }, { additionalProperties: false }),
        response: { 202: Type.Object({ message: Type.String() }), 400: Problem, 429: Problem },
      },
    },
    async (req, reply) => {
      await spendPasswordLink(req.body.email, req.ip, reply);
      const log = req.log;
      // after the answer: its timing does not depend on whether the address has an account
      setImmediate(() => {
        requestPasswordReset(
          { pool, mail: fastify.portalMail, publicUrl: config.API_PUBLIC_URL, ttlMs: config.PASSWORD_RESET_TTL },
          req.body.email,
        ).then(
          (sent) => log.info({ sent }, 'password link requested'),
          (err: unknown) => log.error({ err }, 'password link not sent'),
        );
      });
      return reply.code(202).send({ message: LINK_ON_ITS_WAY });
    },
  );

  app.post(
    '/api/auth/password/reset',
    {
      config: { access: access.public },
      schema: {
        tags: ['auth'],
        summary: "Choose a new password with a password link's token: signs in and ends every other session",
        description:
          `\`password\`: at least ${PASSWORD_MIN_LENGTH} characters. The answer is a session, as from POST /api/auth/login; every earlier session of the person ends. ` +
          '404: not a password link; 409: used already; 410: replaced by a newer link, or expired.',
        body: Type.Object(
          { token: Text({ minLength: 20, maxLength: 200 }), password: Text({ minLength: 1, maxLength: 1024 }) },
          { additionalProperties: false },
        ),
        response: { 200: SessionSchema, 400: Problem, 404: Problem, 409: Problem, 410: Problem },
      },
    },
    async (req, reply) => {
      const done = await resetPassword(pool, config.BCRYPT_COST, req.body);
      req.log.info({ userId: done.user.id, sessionsEnded: done.sessionsEnded }, 'password reset');
      return sendSession(app, reply, await startSession(pool, config, done.user));
    },
  );
}
