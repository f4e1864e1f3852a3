/**
 * The workspace's portal address, `/w/<slug>`, where the welcome and payment-failed e-mails link
 * (DESIGN §5). The browser portal has taken it over: a known workspace is a 302 to its place in the
 * portal, `/app/w/<slug>/`, which asks for sign-in when there is no session and then opens that
 * workspace's dashboard. Public: an unknown slug is a 404 problem (the address names no workspace,
 * so the portal is not opened for it).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { findWorkspace } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';
import { PORTAL_PATH } from '../web/index.js';

export default async function workspacePageRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/w/:slug',
    {
      config: { access: access.public },
      schema: {
        tags: ['portal'],
        summary: "The workspace's address in the e-mails: on to the workspace in the portal",
        description:
          'A 302 to `/app/w/<slug>/`, where the portal signs the person in (when needed) and opens the workspace. 404 for an unknown workspace.',
        params: Type.Object({ slug: TenantName }),
        response: { 302: Type.Null({ description: 'to /app/w/<slug>/' }), 404: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      return reply
        .code(302)
        .header('location', `${PORTAL_PATH}w/${workspace.slug}/`)
        .header('cache-control', 'no-store')
        .send(null);
    },
  );
}
