/**
 * The account API as a plain Fastify plugin tree: shared plugins first, then one plugin per
 * route area. server.ts builds the dependencies and listens; tests call buildApp and inject.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { problemDetails, serverOptions } from '../lib/http.js';
import { ProblemSchema } from './schemas/common.js';
import { openapi } from './plugins/openapi.js';
import { problemResponses } from './plugins/problem-responses.js';
import type { ApiDeps } from './plugins/deps.js';
import healthRoutes from './routes/health/index.js';
import opsTenantRoutes from './routes/ops/tenants.js';
import opsTenantClientRoutes from './routes/ops/tenant-clients.js';
import { WorkspaceCallLog, workspaceAuth } from './plugins/workspace-auth.js';
import { accessControl } from './plugins/access.js';
import authRoutes from './routes/auth/index.js';
import apiKeyRoutes from './routes/portal/apikeys.js';
import executionLogRoutes from './routes/portal/execution-log.js';
import dashboardRoutes from './routes/portal/dashboards.js';
import opsUserRoutes from './routes/ops/users.js';
import opsRateLimitRoutes from './routes/ops/rate-limits.js';
import opsExecutionLogRoutes from './routes/ops/execution-log.js';
import opsServiceKeyRoutes from './routes/ops/service-keys.js';
import provisionedWebhookRoutes from './routes/webhooks/provisioned.js';
import workspacePageRoutes from './routes/portal/workspace-page.js';

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  // the request log writes each Workspace API call's execution-log record with its log line
  const app = Fastify(serverOptions(deps.config.LOG_LEVEL, new WorkspaceCallLog()));
  app.decorate('deps', deps);
  app.addSchema(ProblemSchema);
  await app.register(problemDetails);
  await app.register(openapi);
  // before any route: each route's declared access (config.access) becomes its first hooks, and an
  // /api route that declares none stops the start
  await app.register(accessControl);
  await app.register(workspaceAuth);
  // after workspace-auth (it sets the security of key routes): every route's problem answers
  await app.register(problemResponses);
  await app.register(healthRoutes);
  await app.register(opsTenantRoutes);
  await app.register(opsTenantClientRoutes);
  await app.register(authRoutes);
  await app.register(apiKeyRoutes);
  await app.register(executionLogRoutes);
  await app.register(dashboardRoutes);
  await app.register(opsUserRoutes);
  await app.register(opsRateLimitRoutes);
  await app.register(opsExecutionLogRoutes);
  await app.register(opsServiceKeyRoutes);
  await app.register(provisionedWebhookRoutes);
  await app.register(workspacePageRoutes);
  return app;
}
