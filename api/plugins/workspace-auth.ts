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
 * Register this plugin before the routes it guards.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { grants, TOKEN_PREFIX, type Scope } from '../../domain/access/api-keys.js';
import { ApiKeyVerifier, invalidKey, type VerifiedKey } from '../../domain/access/api-key-verifier.js';
import { RevocationFeed } from '../../domain/access/key-revocations.js';
import { AppError } from '../../lib/errors.js';
import { ExecutionLog, ensurePartitions } from '../../domain/access/execution-log.js';
import { RateLimits, type BucketResult, type Limits } from '../../domain/access/rate-limits.js';
import { OneLinePerRequest } from '../../lib/http.js';
import { WorkspaceStanding, workspaceSuspended } from '../../domain/billing/standing.js';

/** Routes that count against the per-minute agent limit as well as the bucket. */
const agentInvocation = (method: string, scope: Scope | null) => scope === 'agents:invoke' && method === 'POST';

declare module 'fastify' {
  interface FastifyRequest {
    workspace: { id: string; slug: string } | null;
    apiKey: { id: string; prefix: string; scopes: string[] } | null;
    /** The route pattern of a Workspace API call, e.g. `/api/portal/odoo/:slug/kpis`. */
    apiRoute: string | null;
  }
  interface FastifyInstance {
    /** `redis`: the auto-pipelined connection of the Workspace API's hot path (also for its caches). */
    workspaceAuth: { verifier: ApiKeyVerifier; rateLimits: RateLimits; executionLog: ExecutionLog; revocations: RevocationFeed; redis: Redis; standing: WorkspaceStanding };
  }
}

/**
 * A workspace named by X-Workspace or `?workspace=` (slug or id) that is not the key's own: a key
 * acts on its own workspace only, and a request that names another one is refused rather than
 * quietly served for the key's workspace.
 */
function otherWorkspaceNamed(req: FastifyRequest, own: { id: string; slug: string }): string | undefined {
  const header = req.headers['x-workspace'];
  const query = (req.query as { workspace?: unknown } | undefined)?.workspace;
  const named = [header, query].flat().filter((v): v is string => typeof v === 'string' && v !== '');
  return named.find((n) => n !== own.slug && n !== own.id);
}

/** A key's buckets: its own and its workspace's. */
const limitedKey = (key: VerifiedKey) => ({ id: key.id, workspaceId: key.workspace.id });

function setRateLimitHeaders(reply: FastifyReply, r: { limit: number; remaining: number; reset: number }) {
  reply.header('ratelimit-limit', r.limit).header('ratelimit-remaining', r.remaining).header('ratelimit-reset', r.reset);
}

export const workspaceAuth = fp(
  async (app: FastifyInstance) => {
    const { config, pool } = app.deps;
    // The hot path's own Redis connection, with auto-pipelining: the revocation + bucket calls of
    // concurrent requests issued in the same tick go out in one write.
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
    app.decorate('workspaceAuth', { verifier, rateLimits, executionLog, revocations, redis, standing });
    // declared up front, so every request object has the same shape (Fastify's advice for speed)
    app.decorateRequest('workspace', null);
    app.decorateRequest('apiKey', null);
    app.decorateRequest('apiRoute', null);
    app.addHook('onClose', async () => {
      await revocations.close();
      rateLimits.close();
      await verifier.close();
      await executionLog.close();
      redis.disconnect();
    });

    function bearerToken(req: FastifyRequest, reply: FastifyReply): string {
      const header = req.headers.authorization;
      const token = header && header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ' ? header.slice(7).trim() : undefined;
      if (token && token.startsWith(TOKEN_PREFIX)) return token;
      reply.header('www-authenticate', 'Bearer');
      throw invalidKey();
    }

    function authenticate(method: string, route: string, scope: Scope | null): onRequestHookHandler {
      const agents = agentInvocation(method, scope);

      /** The checks that need no I/O once the key, its limits and a token of its bucket are known. */
      function authorize(req: FastifyRequest, reply: FastifyReply, key: VerifiedKey, limits: Limits, bucket: BucketResult, suspended: boolean) {
        if (bucket.revoked) {
          verifier.forget(key.id);
          reply.header('www-authenticate', 'Bearer');
          throw invalidKey();
        }
        // what the routes, the execution log and the "request completed" line (lib/http.ts) know
        // of this call: workspace, key (id, prefix, scopes; never the token) and route
        req.workspace = key.workspace;
        req.apiKey = key;
        req.apiRoute = route;
        verifier.touch(key.id);
        setRateLimitHeaders(reply, bucket);
        if (!bucket.allowed) {
          reply.header('retry-after', bucket.retryAfter);
          if (bucket.by === 'workspace') {
            throw new AppError(
              'RATE_LIMITED',
              `Workspace "${key.workspace.slug}" exceeded its limit of ${limits.workspaceBurst} requests burst, ${limits.workspacePerSecond}/s sustained, shared by all its keys; retry after ${bucket.retryAfter} s.`,
              { rateLimit: 'workspace' },
            );
          }
          throw new AppError('RATE_LIMITED', `This key exceeded its limit of ${limits.burst} requests burst, ${limits.perSecond}/s sustained; retry after ${bucket.retryAfter} s.`, {
            rateLimit: 'key',
          });
        }
        if (suspended) throw workspaceSuspended(key.workspace.slug);
        if (scope && !grants(key.scopes, scope)) {
          throw new AppError('FORBIDDEN', `This key lacks the scope "${scope}" this endpoint needs.`, { requiredScope: scope });
        }
        const slug = (req.params as { slug?: string } | undefined)?.slug;
        if (slug !== undefined && slug !== key.workspace.slug) {
          throw new AppError('FORBIDDEN', `This key belongs to workspace "${key.workspace.slug}" and cannot reach workspace "${slug}".`);
        }
        const named = otherWorkspaceNamed(req, key.workspace);
        if (named !== undefined) {
          throw new AppError(
            'FORBIDDEN',
            `This key belongs to workspace "${key.workspace.slug}"; it cannot act on workspace "${named}" named by X-Workspace or ?workspace= (leave them out, or name the key's own workspace).`,
          );
        }
      }

      /** Whatever needs I/O: bcrypt on first sight, the limits, Redis, the agent limit. */
      async function authenticateWithIo(req: FastifyRequest, reply: FastifyReply, token: string, cachedKey: VerifiedKey | undefined) {
        const key =
          cachedKey ??
          (await verifier.verify(token).catch((err) => {
            reply.header('www-authenticate', 'Bearer');
            throw err;
          }));
        const limits = rateLimits.cachedLimitsFor(key.workspace.id) ?? (await rateLimits.limitsFor(key.workspace.id));
        const fresh = revocations.fresh();
        const bucket =
          (fresh && rateLimits.admitFromLease(limitedKey(key), limits)) ||
          (await rateLimits.admitRequest(limitedKey(key), limits, { checkRevoked: !fresh }).catch((err) => {
            // without Redis neither revocation nor the limits can be checked: refuse (fail closed)
            req.log.error({ err }, 'workspace key check: Redis unavailable');
            throw new AppError('UNAVAILABLE', 'Workspace API keys cannot be checked right now; retry shortly.');
          }));
        const suspended = await standing.suspended(key.workspace.id);
        authorize(req, reply, key, limits, bucket, suspended);
        if (agents) {
          const agent = await rateLimits.admitAgentInvocation(key.id, limits);
          setRateLimitHeaders(reply, agent);
          if (!agent.allowed) {
            reply.header('retry-after', agent.reset);
            throw new AppError('RATE_LIMITED', `This key exceeded its ${agent.limit} agent invocations per minute; retry after ${agent.reset} s.`);
          }
        }
      }

      // a callback-style hook: the hot path (token verified before, limits read recently, the
      // revocation feed fresh, a leased token left) runs synchronously, without I/O or a promise
      return function workspaceKeyAuth(req, reply, done) {
        try {
          const token = bearerToken(req, reply);
          const key = verifier.cached(token, req.raw.socket);
          const limits = key && rateLimits.cachedLimitsFor(key.workspace.id);
          const suspended = key && standing.cached(key.workspace.id);
          const bucket = key && limits && suspended !== undefined && !agents && revocations.fresh() ? rateLimits.admitFromLease(limitedKey(key), limits) : undefined;
          if (!bucket) return void authenticateWithIo(req, reply, token, key).then(() => done(), done);
          authorize(req, reply, key!, limits!, bucket, suspended === true);
        } catch (err) {
          return done(err as Error);
        }
        done();
      };
    }

    app.addHook('onRoute', (route: RouteOptions) => {
      const declared = route.config?.access;
      if (declared?.kind !== 'workspaceKey' && declared?.kind !== 'adminOrKey') return;
      // Fastify derives the HEAD route from the GET route's options, hooks included
      if ([route.onRequest].flat().some((h) => h?.name === 'workspaceKeyAuth')) return;
      const method = [route.method].flat().find((m) => m !== 'HEAD') ?? 'GET';
      const check = authenticate(method, route.url, declared.scope);
      // adminOrKey: only a request that presents a workspace key is checked here (an admin's login by access.ts)
      const hook: onRequestHookHandler =
        declared.kind === 'workspaceKey'
          ? check
          : function workspaceKeyAuth(req, reply, done) {
              const h = req.headers.authorization;
              if (typeof h === 'string' && /^bearer\s+/i.test(h) && h.replace(/^bearer\s+/i, '').trim().startsWith(TOKEN_PREFIX)) return check.call(this, req, reply, done);
              done();
            };
      route.onRequest = [hook, ...[route.onRequest ?? []].flat()];
    });
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
      occurredAt: new Date(),
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
