/**
 * Every route's error answers, declared in one place for the OpenAPI document: each 4xx/5xx a
 * route can give is an `application/problem+json` Problem (lib/http.ts sends them so). A route
 * lists the statuses its handler raises (404, 409, …); this adds those every route of its kind
 * can give whoever raises them:
 *
 * - every route: 400 (validation, text the platform refuses), 500 and 503 (a dependency down);
 * - a route that reads a body: 413 (too large) and 415 (content type);
 * - a route with path parameters: 404 and 414 (a parameter over the length limit);
 * - a guarded route (it declares `security`): 401 and 403; a workspace-key route also 429.
 *
 * Register it after the plugins that set a route's `security` (workspace-auth) and before the routes.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { problemRef } from '../schemas/common.js';

const problemContent = () => ({ content: { 'application/problem+json': { schema: problemRef } } });
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export const problemResponses = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRoute', (route: RouteOptions) => {
      const schema = (route.schema ??= {}) as {
        response?: Record<string, unknown>;
        security?: Record<string, unknown>[];
        body?: unknown;
        hide?: boolean;
      };
      if (schema.hide || route.url.startsWith('/docs')) return;
      const response = (schema.response ??= {});
      const statuses = new Set<number>([400, 500, 503]);
      const methods = [route.method].flat();
      if (schema.body !== undefined || methods.some((m) => BODY_METHODS.has(m))) statuses.add(413).add(415);
      if (route.url.includes(':')) statuses.add(404).add(414);
      if (schema.security?.length) {
        statuses.add(401).add(403);
        if (schema.security.some((s) => 'workspaceKey' in s)) statuses.add(429);
      }
      for (const key of Object.keys(response)) if (Number(key) >= 400) statuses.add(Number(key));
      for (const status of statuses) response[status] = problemContent();
    });
  },
  { name: 'problem-responses', dependencies: ['workspace-auth'] },
);
