/**
 * Ops API: add a user to a workspace with a role (`npm run cli -- users add`). Creates the user
 * when the e-mail is new (201) with the password given (bcrypt), or adds the existing user (200),
 * and sets the membership's role. An existing user's password is never replaced silently: a
 * password for an existing e-mail is a 409 unless `resetPassword` says so. Guarded by the ops
 * service key.
 */
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { addUserToWorkspace } from '../../../domain/access/workspaces.js';
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const UserAdded = Type.Object({
  user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }),
  workspace: Type.String(),
  role: Type.String(),
  userCreated: Type.Boolean(),
  passwordSet: Type.Boolean(),
});

export default async function opsUserRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/ops/users',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Add a user to a workspace with a role (201 creates the user; 200 adds an existing one)',
        description:
          'An existing user keeps their password: sending a password for an existing e-mail is refused with 409 unless resetPassword is true.',
        body: Type.Object(
          {
            workspace: TenantName,
            email: Type.String({ pattern: '^[^@\\s\\u0000]+@[^@\\s\\u0000]+\\.[^@\\s\\u0000]+$', maxLength: 320 }),
            role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
            name: Type.Optional(Text({ maxLength: 200 })),
            password: Type.Optional(Text({ minLength: 12, maxLength: 1024 })),
            resetPassword: Type.Optional(
              Type.Boolean({ description: 'replace the password of an existing user (else 409)' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: UserAdded,
          201: UserAdded,
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { workspace, role, name, password, resetPassword } = req.body;
      const email = req.body.email.toLowerCase();
      if (resetPassword && !password)
        throw new AppError('BAD_REQUEST', 'body.resetPassword needs body.password: the new password.');
      const hash = password ? await bcrypt.hash(password, app.deps.config.BCRYPT_COST) : null;
      const result = await addUserToWorkspace(app.deps.pool, {
        workspace,
        email,
        role,
        name,
        passwordHash: hash,
        resetPassword,
      });
      req.log.info(
        { userId: result.id, workspace, role, userCreated: result.created, passwordSet: hash !== null },
        'user added to workspace',
      );
      return reply.code(result.created ? 201 : 200).send({
        user: { id: result.id, email: result.email, name: result.name },
        workspace,
        role,
        userCreated: result.created,
        passwordSet: hash !== null,
      });
    },
  );
}
