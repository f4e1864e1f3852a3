/**
 * POST /api/webhooks/provisioned (specification §3.2, §4.1): the provisioning callback that
 * creates a provisioned tenant's workspace entry in the account portal. Called by the
 * `client.provisioned` consumer with a service key in X-API-Key; never by customers.
 *
 * Idempotent: the first call creates the workspace (slug = tenant), links the tenant to it and
 * makes the owner its admin (201); every later call finds that workspace, makes sure the owner is
 * still its admin and answers 200 with it. All of it happens in one transaction.
 *
 * The owner is created without a password: they sign in with OIDC, or set a password through
 * the login flow later. An existing user with that e-mail is reused (and keeps their password).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { withTransaction } from '../../../lib/db.js';
import { AppError } from '../../../lib/errors.js';
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const ProvisionedBody = Type.Object(
  {
    tenant: TenantName,
    workspace: Type.Optional(Text({ minLength: 1, maxLength: 100, description: 'display name; defaults to the tenant name' })),
    ownerEmail: Type.String({ format: 'email', maxLength: 254 }),
    ownerName: Text({ minLength: 1, maxLength: 200 }),
    tier: Type.Union([Type.Literal('starter'), Type.Literal('pro'), Type.Literal('enterprise')]),
    erpVersion: Type.Union([Type.Literal('17'), Type.Literal('18'), Type.Literal('19')]),
  },
  { additionalProperties: false },
);

const WorkspaceEntry = Type.Object({
  workspace: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String(), createdAt: Type.String() }),
  tenant: Type.String(),
  owner: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String(), role: Type.Literal('admin') }),
  created: Type.Boolean({ description: 'true when this call created the workspace entry' }),
});

interface WorkspaceRow {
  id: string;
  slug: string;
  name: string;
  created_at: Date;
}

export default async function provisionedWebhookRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/webhooks/provisioned',
    {
      config: { access: access.service('provisioning') },
      schema: {
        tags: ['webhooks'],
        summary: 'Provisioning callback: create the workspace entry of a provisioned tenant',
        description: 'Needs the provisioning webhook service key in X-API-Key (PROVISIONING_WEBHOOK_ACCEPTED_KEYS).',
        body: ProvisionedBody,
        response: {
          200: WorkspaceEntry,
          201: WorkspaceEntry,
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          404: Type.Ref('Problem'),
        },
      },
    },
    async (req, reply) => {
      const { tenant, ownerName } = req.body;
      const ownerEmail = req.body.ownerEmail.toLowerCase();
      const result = await withTransaction(app.deps.pool, async (db) => {
        // the tenant row serialises concurrent callbacks for the same tenant
        const found = await db.query<{ workspace_id: string | null }>(
          'SELECT workspace_id FROM tenants WHERE name = $1 FOR UPDATE',
          [tenant],
        );
        const row = found.rows[0];
        if (!row) throw new AppError('NOT_FOUND', `Tenant "${tenant}" is not known to the platform.`);

        let workspace: WorkspaceRow | undefined;
        let created = false;
        if (row.workspace_id) {
          workspace = (await db.query<WorkspaceRow>('SELECT id, slug, name, created_at FROM workspaces WHERE id = $1', [row.workspace_id]))
            .rows[0];
        }
        if (!workspace) {
          const inserted = await db.query<WorkspaceRow>(
            `INSERT INTO workspaces (slug, name) VALUES ($1, $2)
             ON CONFLICT (slug) DO NOTHING RETURNING id, slug, name, created_at`,
            [tenant, req.body.workspace ?? tenant],
          );
          workspace =
            inserted.rows[0] ??
            (await db.query<WorkspaceRow>('SELECT id, slug, name, created_at FROM workspaces WHERE slug = $1', [tenant])).rows[0]!;
          await db.query('UPDATE tenants SET workspace_id = $2 WHERE name = $1', [tenant, workspace.id]);
          created = true;
        }

        const user = await db.query<{ id: string; email: string; name: string }>(
          `INSERT INTO users (email, name) VALUES ($1, $2)
           ON CONFLICT (email) DO UPDATE SET name = CASE WHEN users.name = '' THEN EXCLUDED.name ELSE users.name END
           RETURNING id, email, name`,
          [ownerEmail, ownerName],
        );
        const owner = user.rows[0]!;
        await db.query(
          `INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')
           ON CONFLICT (user_id, workspace_id) DO UPDATE SET role = 'admin'`,
          [owner.id, workspace.id],
        );
        return { workspace, owner, created };
      });

      req.log.info(
        { tenant, workspaceId: result.workspace.id, created: result.created },
        result.created ? 'workspace entry created' : 'workspace entry already there',
      );
      return reply.code(result.created ? 201 : 200).send({
        workspace: {
          id: result.workspace.id,
          slug: result.workspace.slug,
          name: result.workspace.name,
          createdAt: result.workspace.created_at.toISOString(),
        },
        tenant,
        owner: { ...result.owner, role: 'admin' as const },
        created: result.created,
      });
    },
  );
}
