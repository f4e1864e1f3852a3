/**
 * Ops API: add a user to a workspace with a role (`npm run cli -- users add`). Creates the user
 * when the e-mail is new, sets the password when one is given (bcrypt), and sets the membership's
 * role. Guarded by the ops service key.
 */
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { withTransaction } from '../../../lib/db.js';
import { AppError } from '../../../lib/errors.js';
import { requireServiceKey } from '../../../domain/service-keys/service-keys.js';

export default async function opsUserRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('onRequest', requireServiceKey(() => [app.deps.config.OPS_API_KEY]));

  app.post(
    '/api/ops/users',
    {
      schema: {
        tags: ['ops'],
        summary: 'Add a user to a workspace with a role (creates the user if needed)',
        security: [{ opsKey: [] }],
        body: Type.Object(
          {
            workspace: Type.String({ pattern: '^[a-z0-9-]{1,30}$' }),
            email: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$', maxLength: 320 }),
            role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
            name: Type.Optional(Type.String({ maxLength: 200 })),
            password: Type.Optional(Type.String({ minLength: 12, maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }),
            workspace: Type.String(),
            role: Type.String(),
            userCreated: Type.Boolean(),
            passwordSet: Type.Boolean(),
          }),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { workspace, role, name, password } = req.body;
      const email = req.body.email.toLowerCase();
      const hash = password ? await bcrypt.hash(password, app.deps.config.BCRYPT_COST) : null;
      const result = await withTransaction(app.deps.pool, async (db) => {
        const ws = await db.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [workspace]);
        if (!ws.rows[0]) throw new AppError('NOT_FOUND', `Workspace "${workspace}" does not exist.`);
        const user = await db.query<{ id: string; email: string; name: string; created: boolean }>(
          `INSERT INTO users (email, name, password_hash) VALUES ($1, coalesce($2, ''), $3)
           ON CONFLICT (email) DO UPDATE
             SET name = coalesce($2, users.name), password_hash = coalesce($3, users.password_hash)
           RETURNING id, email, name, (xmax = 0) AS created`,
          [email, name ?? null, hash],
        );
        const u = user.rows[0]!;
        await db.query(
          `INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, $3)
           ON CONFLICT (user_id, workspace_id) DO UPDATE SET role = EXCLUDED.role`,
          [u.id, ws.rows[0].id, role],
        );
        return u;
      });
      req.log.info({ userId: result.id, workspace, role }, 'user added to workspace');
      return reply.code(201).send({
        user: { id: result.id, email: result.email, name: result.name },
        workspace,
        role,
        userCreated: result.created,
        passwordSet: hash !== null,
      });
    },
  );
}
