/**
 * The Workspace API's key authentication (specification §5.1–5.3, §8): every route that declares
 * `config: { access: access.key(scope) }` (api/plugins/access.ts) gets, when it is registered,
 *
 * 1. key verification (`Authorization: Bearer ws_live_…`; domain/access/api-key-verifier.ts): a missing,
 *    malformed, unknown, wrong or revoked key gets the same 401. Revocations reach every replica
 *    through the revocation feed (domain/access/key-revocations.ts); while a replica cannot trust its feed,
 *    it checks the key's revocation marker in Redis on every request instead;
 * 2. the rate limits (domain/access/rate-limits.ts): the per-key token bucket and the per-workspace one
 *    (all its keys together) on every route (tokens leased from Redis a few at a time when a key is
 *    busy), the per-minute agent limit on agent
 *    invocations; 429 with Retry-After, and RateLimit-* headers on every answer;
 * 3. the workspace's standing (domain/billing/standing.ts): a suspended workspace (payment failed past
 *    its grace period) gets 403 with a problem of type `workspace-suspended` on every key route;
 * 4. the scope check: 403 naming the scope needed (`*` grants all);
 * 5. the workspace binding: a `:slug` in the path, and a workspace named by X-Workspace or
 *    `?workspace=`, must be the key's own workspace, else 403 (403 rather than 404: the caller
 *    learns nothing about the other workspace either way, and 403 says plainly that this key
 *    cannot go there, so nobody believes they acted on the other workspace);
 * 6. the execution log record of the call (domain/access/execution-log.ts), whatever its outcome, written
 *    with its pino line, Fastify's "request completed" line, by `WorkspaceCallLog` below: one
 *    line per call with the key's workspace id, prefix, method and route, never the token.
 *
 * The request is decorated with `workspace` ({ id, slug }) and `apiKey` ({ id, prefix, scopes }).
 * The check itself, in named pieces, is in plugins/workspace-key-check.ts; this file starts what it
 * needs (`startKeyServices`), attaches it to the routes that declare a key (`attachKeyChecks`) and
 * writes the call log (`WorkspaceCallLog`). Register this plugin before the routes it guards.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { ApiKeyVerifier } from '../../domain/access/api-key-verifier.js';
import { RevocationFeed } from '../../domain/access/key-revocations.js';
import { ExecutionLog, ensurePartitions } from '../../domain/access/execution-log.js';
import { RateLimits } from '../../domain/access/rate-limits.js';
import { OneLinePerRequest } from '../../lib/http.js';
import { WorkspaceStanding } from '../../domain/billing/standing.js';
import { KEY_CHECK_HOOK, keyCheck, presentsWorkspaceKey, type KeyCheckDeps } from './workspace-key-check.js';

type WorkspaceAuth = KeyCheckDeps & { executionLog: ExecutionLog; redis: Redis };

declare module 'fastify' {
  interface FastifyRequest {
    workspace: { id: string; slug: string } | null;
    apiKey: { id: string; prefix: string; scopes: string[] } | null;
    /** The route pattern of a Workspace API call, e.g. `/api/portal/odoo/:slug/kpis`. */
    apiRoute: string | null;
  }
  interface FastifyInstance {
    /** `redis`: the auto-pipelined connection of the Workspace API's hot path (also for its caches). */
    workspaceAuth: WorkspaceAuth;
  }
}

/**
 * What the key check needs: its own Redis connection with auto-pipelining (the revocation +
 * bucket calls of concurrent requests issued in the same tick go out in one write), the key
 * verifier, the limits, the workspaces' standing, the execution log and the revocation feed.
 */
async function startKeyServices(app: FastifyInstance): Promise<WorkspaceAuth & { close(): Promise<void> }> {
  const { config, pool } = app.deps;
  const redis = new Redis(config.REDIS_URL, { enableAutoPipelining: true, maxRetriesPerRequest: 2 });
  redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis (workspace auth) connection error'));
  const verifier = new ApiKeyVerifier({
    pool,
    redis,
    cacheTtlMs: config.API_KEY_CACHE_TTL_SECONDS * 1000,
    cacheSize: config.API_KEY_CACHE_SIZE,
    usageFlushMs: config.API_KEY_USAGE_FLUSH_MS,
    onError: (err) => app.log.error({ err }, 'writing last_used_at of workspace keys failed'),
  });
  const rateLimits = new RateLimits({ pool, redis, config });
  const standing = new WorkspaceStanding(pool, config.WORKSPACE_STANDING_CACHE_MS);
  const executionLog = new ExecutionLog({
    pool,
    log: app.log,
    flushMs: config.EXECUTION_LOG_FLUSH_MS,
    partitionsAhead: config.EXECUTION_LOG_PARTITIONS_AHEAD,
  });
  const subscriber = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2 });
  subscriber.on('error', (err) => app.log.warn({ err: err.message }, 'redis (revocation feed) connection error'));
  const revocations = new RevocationFeed({
    redis,
    subscriber,
    onRevoked: (keyId) => {
      verifier.forget(keyId);
      rateLimits.dropLease(keyId);
    },
    onResubscribed: () => {
      app.log.warn('revocation feed resubscribed: forgetting every verified workspace key');
      verifier.clear();
    },
    onError: (err) => app.log.warn({ err }, 'revocation feed'),
  });
  await ensurePartitions(pool, config.EXECUTION_LOG_PARTITIONS_AHEAD);
  await revocations.start();
  const close = async () => {
    await revocations.close();
    rateLimits.close();
    await verifier.close();
    await executionLog.close();
    redis.disconnect();
  };
  return { verifier, rateLimits, executionLog, revocations, redis, standing, close };
}

/**
 * The onRoute hook that puts the key check first on every route declaring `access.key(scope)`
 * or `access.adminOrKey(scope)`; on the latter only a request presenting a workspace key is
 * checked here (an admin's session is checked by plugins/access.ts).
 */
function attachKeyChecks(deps: KeyCheckDeps) {
  return function attachKeyCheck(route: RouteOptions) {
    const declared = route.config?.access;
    if (declared?.kind !== 'workspaceKey' && declared?.kind !== 'adminOrKey') return;
    // Fastify derives the HEAD route from the GET route's options, hooks included
    if ([route.onRequest].flat().some((h) => h?.name === KEY_CHECK_HOOK)) return;
    const method = [route.method].flat().find((m) => m !== 'HEAD') ?? 'GET';
    const check = keyCheck(deps, method, route.url, declared.scope);
    const hook: onRequestHookHandler =
      declared.kind === 'workspaceKey'
        ? check
        : function workspaceKeyAuth(req, reply, done) {
            if (presentsWorkspaceKey(req)) return check.call(this, req, reply, done);
            done();
          };
    route.onRequest = [hook, ...[route.onRequest ?? []].flat()];
  };
}

export const workspaceAuth = fp(
  async (app: FastifyInstance) => {
    const { close, ...services } = await startKeyServices(app);
    app.decorate('workspaceAuth', services);
    // declared up front, so every request object has the same shape (Fastify's advice for speed)
    app.decorateRequest('workspace', null);
    app.decorateRequest('apiKey', null);
    app.decorateRequest('apiRoute', null);
    app.addHook('onClose', close);
    app.addHook('onRoute', attachKeyChecks(services));
  },
  { name: 'workspace-auth', dependencies: [] },
);

/**
 * The account API's request log (give it to Fastify as `logController`): the "request completed"
 * line of a Workspace API call also names the key's workspace, prefix and route, and the same
 * record goes to the workspace's execution log, in one place, whatever the call's outcome.
 */
export class WorkspaceCallLog extends OneLinePerRequest {
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    super.requestCompleted(error, request, reply);
    const { workspace, apiKey } = request;
    if (!workspace || !apiKey) return;
    request.server.workspaceAuth.executionLog.record({
      occurredAt: Date.now(),
      workspaceId: workspace.id,
      keyPrefix: apiKey.prefix,
      method: request.method,
      route: request.apiRoute ?? request.url.split('?')[0]!,
      status: reply.statusCode,
      latencyMs: reply.elapsedTime,
      requestId: request.id,
    });
  }

  protected override completedLine(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
    const line = super.completedLine(request, reply);
    if (!request.apiKey) return line;
    line.workspaceId = request.workspace?.id;
    line.keyPrefix = request.apiKey.prefix;
    line.method = request.method;
    line.route = request.apiRoute;
    return line;
  }
}
