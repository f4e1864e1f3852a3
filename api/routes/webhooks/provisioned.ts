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
import { TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';
import { ensureTenantWorkspace } from '../../../domain/access/workspaces.js';
import { erpVersions, tiers } from '../../../domain/tenants/types.js';

const ProvisionedBody = Type.Object(
  {
    tenant: TenantName,
    workspace: Type.Optional(
      Text({ minLength: 1, maxLength: 100, description: 'display name; defaults to the tenant name' }),
    ),
    ownerEmail: Type.String({ format: 'email', maxLength: 254 }),
    ownerName: Text({ minLength: 1, maxLength: 200 }),
    tier: Type.Union(tiers.map((t) => Type.Literal(t))),
    erpVersion: Type.Union(erpVersions.map((v) => Type.Literal(v))),
  },
  { additionalProperties: false },
);

const WorkspaceEntry = Type.Object({
  workspace: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String(), createdAt: Type.String() }),
  tenant: Type.String(),
  owner: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String(), role: Type.Literal('admin') }),
  created: Type.Boolean({ description: 'true when this call created the workspace entry' }),
});

export default async function provisionedWebhookRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/webhooks/provisioned',
    {
      config: { access: access.service('provisioning') },
      schema: {
        tags: ['webhooks'],
        summary: 'Provisioning callback: create the workspace entry of a provisioned tenant',
        description: 'Needs the provisioning service key (provisioning → account-api) in X-API-Key.',
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
      const result = await ensureTenantWorkspace(app.deps.pool, {
        tenant,
        workspaceName: req.body.workspace,
        ownerEmail,
        ownerName,
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
          createdAt: result.workspace.createdAt.toISOString(),
        },
        tenant,
        owner: { ...result.owner, role: 'admin' as const },
        created: result.created,
      });
    },
  );
}
