/**
 * `POST /api/portal/erp/sign-in` ("Open ERP"): a single-use link (60 s) to the platform's OpenID
 * provider that signs the caller in there without their password (domain/identity/erp-handoff.ts)
 * and goes on to the ERP's own sign-in through the provider, started as the ERP's "Sign in with
 * Plana" starts it (erpSignInStartUrl): the ERP signs them in and opens its web client, with no form
 * or click of the ERP's on the way. The ERP's login page stays as it is (its password form for the
 * ERP's own admin, its provider button). Members and admins; the ERP's users are brought up to the
 * workspace's membership first (someone who joined since the last reconcile gets theirs).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { erpApiUserDeps } from '../../../domain/erp/admin-session.js';
import { issueErpHandoff } from '../../../domain/identity/erp-handoff.js';
import { erpSignInStartUrl, syncTenantErpUsers } from '../../../domain/identity/erp-sign-in.js';
import type { ApiDeps } from '../../plugins/deps.js';
import { oidcProviderIssuer, tenantBaseUrl, whyProviderUnavailable } from '../../../domain/identity/oidc-clients.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';
import { workspaceTenantWithRoute } from '../../../domain/tenants/http-routes.js';

const Problem = Type.Ref('Problem');

/**
 * The workspace's ERP users as the membership says now (the caller may have joined since the last
 * reconcile); answers the ERP's provider record.
 */
async function ensureCallerInErp(deps: ApiDeps, tenant: { name: string; database: string }) {
  let signIn;
  try {
    signIn = await syncTenantErpUsers(erpApiUserDeps(deps.config, deps.pool), tenant);
  } catch (err) {
    throw new AppError('UNAVAILABLE', 'The ERP does not answer; try again in a minute.', {}, { cause: err });
  }
  if (!signIn)
    throw new AppError('UNAVAILABLE', "The ERP's sign-in is not set up yet; the platform sets it up shortly.");
  return signIn.provider;
}

export default async function erpSignInRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/portal/erp/sign-in',
    {
      config: { access: access.member },
      schema: {
        tags: ['integrations'],
        summary: "Open the workspace's ERP signed in: a single-use link (60 s) for the browser to follow",
        querystring: Type.Object({
          workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
        }),
        response: {
          200: Type.Object({
            url: Type.String({ description: 'follow it at once in the browser; it works once, for 60 s' }),
            erpUrl: Type.String({ description: "the ERP's web client, where the link lands" }),
          }),
          400: Problem,
          401: Problem,
          403: Problem,
          404: Problem,
          503: Problem,
        },
      },
    },
    async (req, reply) => {
      const { pool, redis, config } = app.deps;
      const route = (await workspaceTenantWithRoute(pool, req.memberWorkspace!.slug))?.route;
      if (!route) throw new AppError('NOT_FOUND', 'This workspace has no ERP yet.');
      const provider = await ensureCallerInErp(app.deps, { name: route.tenant, database: route.database });
      // the link leads to the provider: a provider that does not answer would leave the browser on an error of its own
      if (await whyProviderUnavailable(oidcProviderIssuer(config)))
        throw new AppError('UNAVAILABLE', "The platform's sign-in service does not answer; try again in a minute.");
      const baseUrl = tenantBaseUrl(config, route.host);
      const target = erpSignInStartUrl(provider, { baseUrl, database: route.database });
      const ticket = await issueErpHandoff(redis, { userId: req.user!.id, target });
      const url = `${oidcProviderIssuer(config)}/portal-sign-in?${new URLSearchParams({ handoff_token: ticket })}`;
      return reply.header('cache-control', 'no-store').send({ url, erpUrl: `${baseUrl}/web` });
    },
  );
}
