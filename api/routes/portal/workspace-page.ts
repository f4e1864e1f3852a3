/**
 * The workspace's portal page, `/w/<slug>`, where the welcome and invitation e-mails link
 * (DESIGN §5). Until the browser portal serves this path, it answers a small HTML page naming the
 * workspace, with the sign-in and API-documentation links. Public: it shows nothing but the
 * workspace's display name, and an unknown slug is a 404 problem.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { findWorkspace } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function workspacePage(workspace: { slug: string; name: string }): string {
  const name = escapeHtml(workspace.name);
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${name} · Plana</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2328}a{color:#0969da}code{background:#f6f8fa;padding:.1em .3em;border-radius:4px}</style></head>
<body>
<h1>${name}</h1>
<p>Your workspace is ready.</p>
<ul>
<li><a href="/api/auth/oidc/start">Sign in</a> with your organisation's account, or with your e-mail and password through <code>POST /api/auth/login</code>.</li>
<li><a href="/docs">API documentation</a>: the Workspace API, API keys (<code>ws_live_…</code>) and their scopes.</li>
</ul>
</body>
</html>
`;
}

export default async function workspacePageRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/w/:slug',
    {
      config: { access: access.public },
      schema: {
        tags: ['portal'],
        summary: "The workspace's portal page (linked from the welcome e-mail)",
        params: Type.Object({ slug: TenantName }),
        response: { 200: { description: 'an HTML page', content: { 'text/html': { schema: Type.String() } } } },
      },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      return reply.type('text/html; charset=utf-8').send(workspacePage(workspace));
    },
  );
}
