/**
 * The pages the portal's e-mails link to, until the browser portal serves these paths (DESIGN §5):
 * `/w/<slug>/join#token=…` (an invitation) and `/account/confirm-email#token=…` (a new e-mail
 * address). The token is in the fragment, which the browser never sends, so no request log holds
 * it; opening a page changes nothing (mail scanners open links): the form posts the token to the API.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { findWorkspace } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const page = (title: string, body: string, script: string) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"><title>${title} · Plana</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:4rem auto;padding:0 1rem;color:#1f2328}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;font:inherit}button{margin-top:1rem;padding:.5rem 1rem;font:inherit}#out{margin-top:1rem}</style></head>
<body>
${body}
<p id="out" role="status"></p>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get('token') || '';
const out = document.getElementById('out');
async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = await res.json().catch(() => ({}));
  return { ok: res.ok, json };
}
${script}
</script>
</body>
</html>
`;

const HTML = { 200: { description: 'an HTML page', content: { 'text/html': { schema: Type.String() } } } };

export default async function linkPageRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/w/:slug/join',
    {
      config: { access: access.public },
      schema: { tags: ['team'], summary: 'The page an invitation e-mail links to (the token is in the fragment)', params: Type.Object({ slug: TenantName }), response: HTML },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      const name = escapeHtml(workspace.name);
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(
        page(
          `Join ${name}`,
          `<h1>Join ${name}</h1>
<p>Choose your name and a password (at least 10 characters). If you already have a Plana account with this e-mail address, give its password.</p>
<form id="f"><label for="name">Name</label><input id="name" autocomplete="name">
<label for="password">Password</label><input id="password" type="password" autocomplete="new-password" required>
<button>Join the workspace</button></form>`,
          `document.getElementById('f').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = document.getElementById('name').value.trim();
  const r = await post('/api/portal/team/invitations/accept', { token, password: document.getElementById('password').value, ...(name ? { name } : {}) });
  out.textContent = r.ok ? 'Welcome! You are a member of ' + r.json.workspace.name + ' now; sign in to continue.' : (r.json.detail || 'That did not work.');
});`,
        ),
      );
    },
  );

  app.get(
    '/account/confirm-email',
    {
      config: { access: access.public },
      schema: { tags: ['profile'], summary: 'The page an e-mail confirmation links to (the token is in the fragment)', response: HTML },
    },
    async (_req, reply) =>
      reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(
        page(
          'Confirm your e-mail address',
          `<h1>Confirm your e-mail address</h1><p>Your Plana account's e-mail address changes once you confirm.</p><button id="confirm">Confirm</button>`,
          `document.getElementById('confirm').addEventListener('click', async () => {
  const r = await post('/api/portal/profile/email/confirm', { token });
  out.textContent = r.ok ? 'Done: your e-mail address is now ' + r.json.email + '.' : (r.json.detail || 'That did not work.');
});`,
        ),
      ),
  );
}
