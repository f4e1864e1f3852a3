/**
 * The addresses the portal's e-mails link to, `/w/<slug>/join#token=…` (an invitation),
 * `/w/<slug>/activate#token=…` (an owner's activation), `/account/reset-password#token=…` (a
 * forgotten password) and `/account/confirm-email#token=…` (a new e-mail address), send the
 * browser on to the portal's pages for them (web/src/pages/LinkPages.tsx), under /app/.
 * The token is in the fragment, which the browser never sends and keeps across the redirect
 * (RFC 9110 §10.2.2), so no request log holds it; opening a page changes nothing (mail scanners
 * open links): the page's form posts the token to the API.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { findWorkspace } from '../../../domain/access/workspaces.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';
import { PORTAL_PATH } from '../web/index.js';

const redirect = (description: string) => ({ 302: Type.Null({ description }) });

/** On to the portal's page at `location`; never cached (the next link may differ). */
function sendOn(reply: FastifyReply, location: string) {
  return reply.code(302).header('location', location).header('cache-control', 'no-store').send(null);
}

/** `/w/<slug>/<page>`: on to the portal's page of that workspace; 404 for a workspace that does not exist. */
function workspaceLinkRoute(fastify: FastifyInstance, page: 'join' | 'activate', summary: string) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    `/w/:slug/${page}`,
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary,
        params: Type.Object({ slug: TenantName }),
        response: { ...redirect(`to /app/w/<slug>/${page}`), 404: Type.Ref('Problem') },
      },
    },
    async (req, reply) => {
      const workspace = await findWorkspace(app.deps.pool, req.params.slug);
      if (!workspace) throw new AppError('NOT_FOUND', `There is no workspace "${req.params.slug}".`);
      return sendOn(reply, `${PORTAL_PATH}w/${workspace.slug}/${page}`);
    },
  );
}

/** `/account/<page>`: on to the portal's page of that name. */
function accountLinkRoute(
  fastify: FastifyInstance,
  page: 'reset-password' | 'confirm-email',
  tag: string,
  summary: string,
) {
  fastify.get(
    `/account/${page}`,
    {
      config: { access: access.public },
      schema: { tags: [tag], summary, response: redirect(`to /app/account/${page}`) },
    },
    async (_req, reply) => sendOn(reply, `${PORTAL_PATH}account/${page}`),
  );
}

export default async function linkPageRoutes(fastify: FastifyInstance) {
  workspaceLinkRoute(
    fastify,
    'join',
    'Where an invitation e-mail links (the token is in the fragment): on to the portal’s accept-and-set-password page',
  );
  workspaceLinkRoute(
    fastify,
    'activate',
    'Where a welcome e-mail’s activation link points (the token is in the fragment): on to the portal’s choose-a-password page',
  );
  accountLinkRoute(
    fastify,
    'reset-password',
    'auth',
    'Where a password link points (the token is in the fragment): on to the portal’s new-password page',
  );
  accountLinkRoute(
    fastify,
    'confirm-email',
    'profile',
    'Where an e-mail confirmation links (the token is in the fragment): on to the portal’s confirmation page',
  );
}
