/**
 * The addresses the portal's e-mails link to, `/w/<slug>/join#token=…` (an invitation),
 * `/w/<slug>/activate#token=…` (an owner's activation), `/account/reset-password#token=…` (a
 * forgotten password) and `/account/confirm-email#token=…` (a new e-mail address), send the
 * browser on to the portal's pages for them (web/src/pages/LinkPages.tsx), under /app/.
 * The token is in the fragment, which the browser never sends and keeps across the redirect
 * (RFC 9110 §10.2.2), so no request log holds it; opening a page changes nothing (mail scanners
 * open links): the page's form posts the token to the API.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { findWorkspace } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';
import { PORTAL_PATH } from '../web/index.js';

const redirect = (description: string) => ({ 302: Type.Null({ description }) });

export default async function linkPageRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/w/:slug/join',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary:
          'Where an invitation e-mail links (the token is in the fragment): on to the portal’s accept-and-set-password page',
        params: Type.Object({ slug: TenantName }),
        response: { ...redirect('to /app/w/<slug>/join'), 404: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      return reply
        .code(302)
        .header('location', `${PORTAL_PATH}w/${workspace.slug}/join`)
        .header('cache-control', 'no-store')
        .send(null);
    },
  );

  app.get(
    '/w/:slug/activate',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary:
          'Where a welcome e-mail’s activation link points (the token is in the fragment): on to the portal’s choose-a-password page',
        params: Type.Object({ slug: TenantName }),
        response: { ...redirect('to /app/w/<slug>/activate'), 404: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      return reply
        .code(302)
        .header('location', `${PORTAL_PATH}w/${workspace.slug}/activate`)
        .header('cache-control', 'no-store')
        .send(null);
    },
  );

  app.get(
    '/account/reset-password',
    {
      config: { access: access.public },
      schema: {
        tags: ['auth'],
        summary: 'Where a password link points (the token is in the fragment): on to the portal’s new-password page',
        response: redirect('to /app/account/reset-password'),
      },
    },
    async (_req, reply) =>
      reply
        .code(302)
        .header('location', `${PORTAL_PATH}account/reset-password`)
        .header('cache-control', 'no-store')
        .send(null),
  );

  app.get(
    '/account/confirm-email',
    {
      config: { access: access.public },
      schema: {
        tags: ['profile'],
        summary:
          'Where an e-mail confirmation links (the token is in the fragment): on to the portal’s confirmation page',
        response: redirect('to /app/account/confirm-email'),
      },
    },
    async (_req, reply) =>
      reply
        .code(302)
        .header('location', `${PORTAL_PATH}account/confirm-email`)
        .header('cache-control', 'no-store')
        .send(null),
  );
}
