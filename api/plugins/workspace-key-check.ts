/**
 * The check a Workspace API route gets when it declares `config: { access: access.key(scope) }`
 * (attached by `attachKeyChecks` in plugins/workspace-auth.ts), in named pieces:
 *
 * - `bearerToken`: the `ws_live_…` key of the request, or the same 401 for anything else;
 * - `admitOrRefuse`: the rate limits (per key, per workspace; 429 with Retry-After), and
 *   `admitAgentInvocation` for the per-minute agent limit;
 * - `refuseOtherWorkspace`: the workspace binding (`:slug`, X-Workspace, `?workspace=`);
 * - `authorize`: the checks without I/O (revoked, limits, standing, scope, workspace binding);
 * - `keyCheck`: the hook itself, synchronous on the hot path, with `checkWithIo` for the rest.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { grants, TOKEN_PREFIX, type Scope } from '../../domain/access/api-keys.js';
import { invalidKey, type ApiKeyVerifier, type VerifiedKey } from '../../domain/access/api-key-verifier.js';
import type { RevocationFeed } from '../../domain/access/key-revocations.js';
import type { BucketResult, Limits, RateLimits } from '../../domain/access/rate-limits.js';
import { workspaceSuspended, type WorkspaceStanding } from '../../domain/billing/standing.js';
import { AppError } from '../../lib/errors.js';
import { ambiguousWorkspace, workspacesNamed } from './named-workspace.js';

/** What the key check needs (the plugin's `app.workspaceAuth`). */
export interface KeyCheckDeps {
  verifier: ApiKeyVerifier;
  rateLimits: RateLimits;
  revocations: RevocationFeed;
  standing: WorkspaceStanding;
}

/** The name of the hook on a route's onRequest list (Fastify copies a GET's hooks to its HEAD). */
export const KEY_CHECK_HOOK = 'workspaceKeyAuth';

/** Routes that count against the per-minute agent limit as well as the bucket. */
const agentInvocation = (method: string, scope: Scope | null) => scope === 'agents:invoke' && method === 'POST';

/** A key's buckets: its own and its workspace's. */
const limitedKey = (key: VerifiedKey) => ({ id: key.id, workspaceId: key.workspace.id });

/**
 * Whether the request presents a workspace key: on an adminOrKey route the key check runs for it,
 * and access.ts checks a user's session only when it is false.
 */
export function presentsWorkspaceKey(req: FastifyRequest): boolean {
  const h = req.headers.authorization;
  return (
    typeof h === 'string' &&
    /^bearer\s+/i.test(h) &&
    h
      .replace(/^bearer\s+/i, '')
      .trim()
      .startsWith(TOKEN_PREFIX)
  );
}

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
export function keyCheck(deps: KeyCheckDeps, method: string, route: string, scope: Scope | null): onRequestHookHandler {
  const { verifier, rateLimits, revocations, standing } = deps;
  const check: RouteCheck = { deps, route, scope, agents: agentInvocation(method, scope) };

  // a callback-style hook: the hot path (token verified before, limits read recently, the
  // revocation feed fresh, a leased token left) runs synchronously, without I/O or a promise
  const hook: onRequestHookHandler = function workspaceKeyAuth(req, reply, done) {
    try {
      const token = bearerToken(req, reply);
      const key = verifier.cached(token, req.raw.socket);
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
