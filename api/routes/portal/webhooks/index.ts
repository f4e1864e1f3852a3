/**
 * Tenant webhooks of the Workspace API (specification §2.4, §5.3): endpoints (URL, event
 * types or all, description, enabled), their secrets, their attempts, a test send and replay.
 * Workspace admins (session + X-Workspace) and keys with `webhooks:write` (DESIGN §5) may call
 * them, each for its own workspace only. Secrets appear on create, reveal and rotate, never in lists.
 */
import type { FastifyInstance } from 'fastify';
import { endpointRoutes } from './endpoints.js';
import { attemptRoutes, secretRoutes } from './secrets-and-attempts.js';
import { deliveryRoutes } from './deliveries.js';

export default async function webhookRoutes(fastify: FastifyInstance) {
  endpointRoutes(fastify);
  secretRoutes(fastify);
  attemptRoutes(fastify);
  deliveryRoutes(fastify);
}
