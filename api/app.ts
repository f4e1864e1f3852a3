/**
 * The account API as a plain Fastify plugin tree: shared plugins first, then one plugin per
 * route area. server.ts builds the dependencies and listens; tests call buildApp and inject.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { problemDetails, serverOptions } from '../lib/http.js';
import { httpMetrics } from '../lib/metrics.js';
import { httpTracing } from '../lib/http-tracing.js';
import { ProblemSchema } from './schemas/common.js';
import { openapi } from './plugins/openapi.js';
import { problemResponses } from './plugins/problem-responses.js';
import type { ApiDeps } from './plugins/deps.js';
import { serviceKeySecrets } from './plugins/service-key-secrets.js';
import { queryCredentials } from './plugins/query-credentials.js';
import healthRoutes from './routes/health/index.js';
import opsTenantRoutes from './routes/ops/tenants.js';
import opsTenantClientRoutes from './routes/ops/tenant-clients.js';
import opsRestoreRoutes from './routes/ops/restores.js';
import { WorkspaceCallLog, workspaceAuth } from './plugins/workspace-auth.js';
import { accessControl } from './plugins/access.js';
import authRoutes from './routes/auth/index.js';
import apiKeyRoutes from './routes/portal/apikeys.js';
import executionLogRoutes from './routes/portal/execution-log.js';
import dashboardRoutes from './routes/portal/dashboards.js';
import bankingRoutes from './routes/banking/index.js';
import opsBankImportRoutes from './routes/ops/bank-import.js';
import opsUserRoutes from './routes/ops/users.js';
import opsRateLimitRoutes from './routes/ops/rate-limits.js';
import opsExecutionLogRoutes from './routes/ops/execution-log.js';
import opsServiceKeyRoutes from './routes/ops/service-keys.js';
import opsOidcSigningKeyRoutes from './routes/ops/oidc-signing-keys.js';
import provisionedWebhookRoutes from './routes/webhooks/provisioned.js';
import workspacePageRoutes from './routes/portal/workspace-page.js';
import { portalMail } from './plugins/portal-mail.js';
import profileRoutes from './routes/portal/profile.js';
import settingsRoutes from './routes/portal/settings.js';
import integrationRoutes from './routes/portal/integrations.js';
import erpSignInRoutes from './routes/portal/erp-sign-in.js';
import teamRoutes from './routes/portal/team/index.js';
import linkPageRoutes from './routes/portal/link-pages.js';
import subscriptionRoutes from './routes/portal/subscription.js';
import invoiceRoutes from './routes/billing/invoices.js';
import stripeWebhookRoutes from './routes/webhooks/stripe.js';
import saasRoutes from './routes/saas/index.js';
import webhookRoutes from './routes/portal/webhooks/index.js';
import opsWebhookRoutes from './routes/ops/webhooks.js';
import agentRoutes from './routes/agents/index.js';
import webRoutes from './routes/web/index.js';

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  // the request log writes each Workspace API call's execution-log record with its log line
  const app = Fastify(
    serverOptions(deps.config.LOG_LEVEL, {
      logController: new WorkspaceCallLog(),
      stream: deps.logStream,
      service: 'account-api',
    }),
  );
  app.decorate('deps', deps);
  app.addSchema(ProblemSchema);
  await app.register(problemDetails);
  // every request counted and timed by route template (GET /metrics on METRICS_PORT, lib/metrics.ts)
  await app.register(httpMetrics, { service: 'account-api' });
  await app.register(httpTracing);
  // before any authentication: a credential in a query string is a 400, whatever the route
  await app.register(queryCredentials);
  await app.register(openapi);
  // before any route: each route's declared access (config.access) becomes its first hooks, and an
  // /api route that declares none stops the start
  await app.register(accessControl);
  // the keys the API sends, reported to their targets (a rotation's switch proof)
  await app.register(serviceKeySecrets);
  await app.register(workspaceAuth);
  // after workspace-auth (it sets the security of key routes): every route's problem answers
  await app.register(problemResponses);
  await app.register(healthRoutes);
  await app.register(opsTenantRoutes);
  await app.register(opsTenantClientRoutes);
  // e-mails of the portal and of the sign-in (password links) go through the notifications service
  await app.register(portalMail);
  await app.register(opsRestoreRoutes);
  await app.register(authRoutes);
  await app.register(apiKeyRoutes);
  await app.register(executionLogRoutes);
  await app.register(dashboardRoutes);
  await app.register(bankingRoutes);
  await app.register(opsUserRoutes);
  await app.register(opsRateLimitRoutes);
  await app.register(opsExecutionLogRoutes);
  await app.register(opsServiceKeyRoutes);
  await app.register(opsOidcSigningKeyRoutes);
  await app.register(opsBankImportRoutes);
  await app.register(provisionedWebhookRoutes);
  await app.register(workspacePageRoutes);
  // the portal: profile, settings, integrations, team
  await app.register(profileRoutes);
  await app.register(settingsRoutes);
  await app.register(integrationRoutes);
  await app.register(erpSignInRoutes);
  await app.register(teamRoutes);
  await app.register(linkPageRoutes);
  await app.register(subscriptionRoutes);
  await app.register(invoiceRoutes);
  await app.register(stripeWebhookRoutes);
  await app.register(saasRoutes);
  await app.register(webhookRoutes);
  await app.register(opsWebhookRoutes);
  await app.register(agentRoutes);
  // the browser portal (web/) at /app/
  await app.register(webRoutes);
  return app;
}
