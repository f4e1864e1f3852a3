/**
 * The account API as a plain Fastify plugin tree: shared plugins first, then one plugin per
 * route area. server.ts builds the dependencies and listens; tests call buildApp and inject.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { problemDetails, serverOptions } from '../lib/http.js';
import { ProblemSchema } from './schemas/common.js';
import { openapi } from './plugins/openapi.js';
import type { ApiDeps } from './plugins/deps.js';
import healthRoutes from './routes/health/index.js';
import opsTenantRoutes from './routes/ops/tenants.js';

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(deps.config.LOG_LEVEL));
  app.decorate('deps', deps);
  app.addSchema(ProblemSchema);
  await app.register(problemDetails);
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(opsTenantRoutes);
  return app;
}
