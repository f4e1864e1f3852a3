/**
 * The Workspace API's key authentication (specification §5.1–5.3, §8): every route that declares
 * `config: { access: access.key(scope) }` (api/plugins/access.ts) gets, when it is registered, one
 * onRequest hook (`keyCheck`) that runs, in order:
 *
 * 1. key verification (`Authorization: Bearer ws_live_…`; `ApiKeyVerifier` in domain/access/api-keys.ts):
 *    a missing, malformed, unknown, wrong or revoked key gets the same 401. Revocations reach every
 *    replica through the revocation feed (the revocation feed in domain/access/api-keys.ts); while a replica cannot
 *    trust its feed, it checks the key's revocation marker in Redis on every request instead;
 * 2. the rate limits (domain/access/workspace-limits.ts): the per-key token bucket and the per-workspace
 *    one (all its keys together), tokens leased from Redis a few at a time when a key is busy; the
 *    per-minute agent limit on agent invocations; 429 with Retry-After, and RateLimit-* headers on
 *    every answer; without Redis a request that needs it is refused (503, fail closed);
 * 3. the workspace's standing (domain/access/workspace-limits.ts): a suspended workspace (payment failed past
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
 * A warm request (key verified before, limits and standing read recently, the revocation feed
 * fresh, a leased token left) runs synchronously, without I/O or a promise. Register this plugin
 * before the routes it guards.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import {
  ApiKeyVerifier,
  grants,
  invalidKey,
  TOKEN_PREFIX,
  type Scope,
  type VerifiedKey,
} from '../../domain/access/api-keys.js';
import { ExecutionLog, ensurePartitions } from '../../domain/access/execution-log.js';
import { RevocationFeed } from '../../domain/access/api-keys.js';
import { RateLimits, type BucketResult, type Limits } from '../../domain/access/workspace-limits.js';
import { WorkspaceStanding, workspaceSuspended } from '../../domain/access/workspace-limits.js';
import { annotateActiveSpan } from '../../lib/tracing.js';
import { AppError } from '../../lib/errors.js';
import { OneLinePerRequest } from '../../lib/http.js';
import { ambiguousWorkspace, presentsWorkspaceKey, workspacesNamed } from './access.js';

/** What the key check needs. */
interface KeyCheckDeps {
  verifier: ApiKeyVerifier;
  rateLimits: RateLimits;
  revocations: RevocationFeed;
  standing: WorkspaceStanding;
}
type WorkspaceAuth = KeyCheckDeps & { executionLog: ExecutionLog };

declare module 'fastify' {
  interface FastifyRequest {
    workspace: { id: string; slug: string } | null;
    apiKey: { id: string; prefix: string; scopes: string[] } | null;
    /** The route pattern of a Workspace API call, e.g. `/api/portal/odoo/:slug/kpis`. */
    apiRoute: string | null;
  }
  interface FastifyInstance {
    /** The key checks' services; the execution-log route flushes `executionLog` before it reads. */
    workspaceAuth: WorkspaceAuth;
  }
}

/** The name of the hook on a route's onRequest list (Fastify copies a GET's hooks to its HEAD). */
const KEY_CHECK_HOOK = 'workspaceKeyAuth';

/** Routes that count against the per-minute agent limit as well as the bucket. */
const agentInvocation = (method: string, scope: Scope | null) => scope === 'agents:invoke' && method === 'POST';

/** `Bearer ` in any case, followed by the credential (checked in place: no text built per request). */
const BEARER_SCHEME = /^bearer /i;

function bearerToken(req: FastifyRequest, reply: FastifyReply): string {
  const header = req.headers.authorization;
  const token = header && header.length > 7 && BEARER_SCHEME.test(header) ? header.slice(7).trim() : undefined;
  if (token && token.startsWith(TOKEN_PREFIX)) return token;
  reply.header('www-authenticate', 'Bearer');
  throw invalidKey();
}

function setRateLimitHeaders(reply: FastifyReply, r: { limit: number; remaining: number; reset: number }) {
  reply
    .header('ratelimit-limit', r.limit)
    .header('ratelimit-remaining', r.remaining)
    .header('ratelimit-reset', r.reset);
}

/** The RateLimit-* headers of the binding bucket; 429 with Retry-After naming the bucket that refused. */
function admitOrRefuse(reply: FastifyReply, key: VerifiedKey, limits: Limits, bucket: BucketResult) {
  setRateLimitHeaders(reply, bucket);
  if (bucket.allowed) return;
  reply.header('retry-after', bucket.retryAfter);
  if (bucket.by === 'workspace') {
    throw new AppError(
      'RATE_LIMITED',
      `Workspace "${key.workspace.slug}" exceeded its limit of ${limits.workspaceBurst} requests burst, ${limits.workspacePerSecond}/s sustained, shared by all its keys; retry after ${bucket.retryAfter} s.`,
      { rateLimit: 'workspace' },
    );
  }
  throw new AppError(
    'RATE_LIMITED',
    `This key exceeded its limit of ${limits.burst} requests burst, ${limits.perSecond}/s sustained; retry after ${bucket.retryAfter} s.`,
    {
      rateLimit: 'key',
    },
  );
}

/** The per-minute agent limit of `POST` agent invocations (after the bucket). */
async function admitAgentInvocation(rateLimits: RateLimits, reply: FastifyReply, key: VerifiedKey, limits: Limits) {
  const agent = await rateLimits.admitAgentInvocation(key.id, limits);
  setRateLimitHeaders(reply, agent);
  if (!agent.allowed) {
    reply.header('retry-after', agent.reset);
    throw new AppError(
      'RATE_LIMITED',
      `This key exceeded its ${agent.limit} agent invocations per minute; retry after ${agent.reset} s.`,
    );
  }
}

/**
 * The workspace binding: a `:slug` in the path, and a workspace named by X-Workspace or
 * `?workspace=` (slug or id), must be the key's own workspace, else 403 (rather than 404: the
 * caller learns nothing about the other workspace either way, and nobody believes they acted on it).
 * Naming two different workspaces there is a 400 naming both (the key's own slug and id are one).
 */
function refuseOtherWorkspace(req: FastifyRequest, own: { id: string; slug: string }) {
  const slug = (req.params as { slug?: string } | undefined)?.slug;
  if (slug !== undefined && slug !== own.slug) {
    throw new AppError(
      'FORBIDDEN',
      `This key belongs to workspace "${own.slug}" and cannot reach workspace "${slug}".`,
    );
  }
  const named = workspacesNamed(req);
  if (named.length === 0) return;
  const others = named.filter((v) => v !== own.slug && v !== own.id);
  if (others.length > 1 || (others.length === 1 && named.length > 1)) throw ambiguousWorkspace(named);
  if (others.length === 1) {
    throw new AppError(
      'FORBIDDEN',
      `This key belongs to workspace "${own.slug}"; it cannot act on workspace "${others[0]}" named by X-Workspace or ?workspace= (leave them out, or name the key's own workspace).`,
    );
  }
}

/** A key's buckets: its own and its workspace's. */
const limitedKey = (key: VerifiedKey) => ({ id: key.id, workspaceId: key.workspace.id });

/** One route's key check: the services, the route's pattern, the scope it needs, whether it invokes an agent. */
interface RouteCheck {
  deps: KeyCheckDeps;
  route: string;
  scope: Scope | null;
  agents: boolean;
}

/** What is known of a request's key once its bucket answered: the key, its limits, the bucket, its workspace's standing. */
interface KeyAdmission {
  key: VerifiedKey;
  limits: Limits;
  bucket: BucketResult;
  suspended: boolean;
}

/** The checks that need no I/O once the key, its limits and a token of its bucket are known. */
function authorize(check: RouteCheck, req: FastifyRequest, reply: FastifyReply, admission: KeyAdmission) {
  const { verifier } = check.deps;
  const { key, limits, bucket, suspended } = admission;
  if (bucket.revoked) {
    verifier.forget(key.id);
    reply.header('www-authenticate', 'Bearer');
    throw invalidKey();
  }
  // what the routes, the execution log and the "request completed" line (lib/http.ts) know
  // of this call: workspace, key (id, prefix, scopes; never the token) and route
  req.workspace = key.workspace;
  req.apiKey = key;
  req.apiRoute = check.route;
  annotateActiveSpan({ 'plana.workspace': key.workspace.slug, 'plana.workspace_id': key.workspace.id });
  verifier.touch(key.id);
  admitOrRefuse(reply, key, limits, bucket);
  if (suspended) throw workspaceSuspended(key.workspace.slug);
  if (check.scope && !grants(key.scopes, check.scope)) {
    throw new AppError('FORBIDDEN', `This key lacks the scope "${check.scope}" this endpoint needs.`, {
      requiredScope: check.scope,
    });
  }
  refuseOtherWorkspace(req, key.workspace);
}

/** Whatever needs I/O: bcrypt on first sight, the limits, Redis, the agent limit. */
async function checkWithIo(
  check: RouteCheck,
  req: FastifyRequest,
  reply: FastifyReply,
  token: string,
  cachedKey: VerifiedKey | undefined,
) {
  const { verifier, rateLimits, revocations, standing } = check.deps;
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
  authorize(check, req, reply, { key, limits, bucket, suspended });
  if (check.agents) await admitAgentInvocation(rateLimits, reply, key, limits);
}

/** The key check of one route (method, pattern, scope needed). */
function keyCheck(deps: KeyCheckDeps, method: string, route: string, scope: Scope | null): onRequestHookHandler {
  const { verifier, rateLimits, revocations, standing } = deps;
  const check: RouteCheck = { deps, route, scope, agents: agentInvocation(method, scope) };

  // a callback-style hook: the hot path (token verified before, limits read recently, the
  // revocation feed fresh, a leased token left) runs synchronously, without I/O or a promise
  const hook: onRequestHookHandler = function workspaceKeyAuth(req, reply, done) {
    try {
      const token = bearerToken(req, reply);
      const key = verifier.cached(token);
      const limits = key && rateLimits.cachedLimitsFor(key.workspace.id);
      const suspended = key && standing.cached(key.workspace.id);
      const bucket =
        key && limits && suspended !== undefined && !check.agents && revocations.fresh()
          ? rateLimits.admitFromLease(limitedKey(key), limits)
          : undefined;
      if (!bucket) return void checkWithIo(check, req, reply, token, key).then(() => done(), done);
      authorize(check, req, reply, { key: key!, limits: limits!, bucket, suspended: suspended === true });
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
  return hook;
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
  return { verifier, rateLimits, executionLog, revocations, standing, close };
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
