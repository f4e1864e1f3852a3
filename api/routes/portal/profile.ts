/**
 * The logged-in person's profile (specification §4.1 `GET/PUT /api/portal/profile`): name, e-mail
 * (changed only once confirmed from the new address) and password (needs the current one; ends
 * every other session). `POST /api/portal/profile/email/confirm` takes the token of the e-mailed
 * link and is public: the token is the credential. Interactive login only: a key gets 403.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { PasswordThrottle } from '../../../domain/access/login-throttle.js';
import { changeProfile, checkCurrentPassword, confirmEmailChange, getProfile } from '../../../domain/portal/profile.js';
import { PASSWORD_MAX_BYTES, PASSWORD_MIN_LENGTH } from '../../../domain/portal/passwords.js';
import { access } from '../../plugins/access.js';
import { EmailAddress, Text } from '../../schemas/common.js';

const Problem = Type.Ref('Problem');
const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
const ProfileSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  name: Type.String(),
  hasPassword: Type.Boolean({ description: 'false for accounts that sign in through OIDC only' }),
  pendingEmail: Type.Union(
    [Type.Object({ email: Type.String(), expiresAt: Type.String({ format: 'date-time' }) }), Type.Null()],
    {
      description: 'an e-mail change waiting for its confirmation',
    },
  ),
  workspaces: Type.Array(Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String(), role: Role })),
});

const Changed = Type.Intersect([
  ProfileSchema,
  Type.Object({
    emailConfirmationSent: Type.Boolean(),
    passwordChanged: Type.Boolean(),
    otherSessionsEnded: Type.Integer(),
    message: Type.Optional(Type.String({ description: 'with 202: what happens next for the e-mail change' })),
  }),
]);
/** The answer to every e-mail change request, whether or not the address is taken. */
const EMAIL_CHANGE_SENT =
  'We sent a confirmation link to the new address; the change takes effect once it is confirmed from there.';

const ProfileChange = Type.Object(
  {
    name: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
    email: Type.Optional(EmailAddress),
    currentPassword: Type.Optional(Text({ minLength: 1, maxLength: 1024 })),
    newPassword: Type.Optional(Text({ minLength: 1, maxLength: 1024 })),
  },
  { additionalProperties: false, minProperties: 1 },
);
const PROFILE_CHANGE_DESCRIPTION =
  'A new `email` is mailed a single-use confirmation link (valid EMAIL_CHANGE_TTL, 24 h) and takes effect only once confirmed; the current address is told. ' +
  'The answer is then 202 with `message`, the same whether or not another account uses that address (which then gets a notice of the attempt, no link, and never changes hands). ' +
  `A \`newPassword\` (at least ${PASSWORD_MIN_LENGTH} characters, at most ${PASSWORD_MAX_BYTES} bytes) ends every other session of yours at once. ` +
  'Both need `currentPassword` (403 when wrong; repeated failures get 429).';
const EmailConfirmation = Type.Object(
  { token: Text({ minLength: 20, maxLength: 200 }) },
  { additionalProperties: false },
);

export default async function profileRoutes(fastify: FastifyInstance) {
  profileRoute(fastify);
  changeProfileRoute(fastify);
  confirmEmailRoute(fastify);
}

function profileRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/portal/profile',
    {
      config: { access: access.user },
      schema: {
        tags: ['profile'],
        summary: 'Your profile',
        response: { 200: ProfileSchema, 401: Problem, 403: Problem },
      },
    },
    async (req) => getProfile(pool, req.user!.id),
  );
}

/** A change of name, e-mail or password; the e-mail and password need the current password, throttled. */
function changeProfileRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  // a wrong current password counts like a failed login, per person
  const throttle = new PasswordThrottle(app.deps.redis, config, 'password-check-failures');

  app.put(
    '/api/portal/profile',
    {
      config: { access: access.user },
      schema: {
        tags: ['profile'],
        summary: 'Change your name, e-mail address or password (fields left out stay as they are)',
        description: PROFILE_CHANGE_DESCRIPTION,
        body: ProfileChange,
        response: {
          200: Changed,
          202: Changed,
          400: Problem,
          401: Problem,
          403: Problem,
          409: Problem,
          429: Problem,
          502: Problem,
          503: Problem,
        },
      },
    },
    async (req, reply) => {
      const user = req.user!;
      if (
        req.body.currentPassword !== undefined ||
        req.body.email !== undefined ||
        req.body.newPassword !== undefined
      ) {
        await throttle.attempt(
          user.id,
          () => checkCurrentPassword(pool, user.id, req.body),
          (seconds) => reply.header('retry-after', seconds),
        );
      }
      const changed = await changeProfile(
        {
          pool,
          mail: app.portalMail,
          publicUrl: config.API_PUBLIC_URL,
          emailChangeTtlMs: config.EMAIL_CHANGE_TTL,
          bcryptCost: config.BCRYPT_COST,
        },
        user,
        req.body,
      );
      const outcome = {
        emailConfirmationSent: changed.emailConfirmationSent,
        passwordChanged: changed.passwordChanged,
        otherSessionsEnded: changed.otherSessionsEnded,
      };
      req.log.info({ userId: user.id, ...outcome }, 'profile changed');
      const answer = { ...changed.profile, ...outcome };
      if (!changed.emailConfirmationSent) return answer;
      reply.code(202);
      return { ...answer, message: EMAIL_CHANGE_SENT };
    },
  );
}

function confirmEmailRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/profile/email/confirm',
    {
      config: { access: access.public },
      schema: {
        tags: ['profile'],
        summary: 'Confirm a new e-mail address with the token of the mailed link; the address changes now',
        description:
          '404: not a valid link (or replaced by a newer request); 409: confirmed already, or the address was taken meanwhile; 410: expired.',
        body: EmailConfirmation,
        response: {
          200: Type.Object({ email: Type.String() }),
          400: Problem,
          404: Problem,
          409: Problem,
          410: Problem,
        },
      },
    },
    async (req) => {
      const { userId, email } = await confirmEmailChange(pool, req.body.token);
      req.log.info({ userId }, 'e-mail address changed');
      return { email };
    },
  );
}
