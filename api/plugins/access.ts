/**
 * Who may call a route, declared on the route itself next to its schema, and denied by default:
 *
 *   app.get('/api/portal/odoo/:slug/kpis', { config: { access: access.key('dashboard:read') }, schema }, handler)
 *
 * | declaration              | who                                                       | checked by                      |
 * |--------------------------|-----------------------------------------------------------|---------------------------------|
 * | `access.public`          | anyone (login, refresh, the OIDC round trip, probes)      | nothing                         |
 * | `access.user`            | a logged-in user (access token from /api/auth/login)      | requireUser                     |
 * | `access.member`          | a member (any role) of the workspace named by X-Workspace | requireUser, then requireWorkspaceMember |
 * | `access.admin`           | an admin of the workspace named by X-Workspace            | requireUser, then requireWorkspaceAdmin |
 * | `access.key(scope)`      | a `ws_live_` workspace key with that scope (null: any)     | keyCheck (plugins/workspace-auth.ts) |
 * | `access.adminOrKey(scope)` | an admin (session) of X-Workspace, or a key with the scope (§5.3 `webhooks:write`) | both of the above |
 * | `access.service(...callers)` | an internal caller's service key in X-API-Key (any of those callers) | requireServiceKey (registry) |
 *
 * The credential checks run as the route's first onRequest hooks, before the body is parsed or
 * validated, so a caller without credentials learns nothing from a validation error; an admin's
 * workspace membership is checked once the request is validated (it reads X-Workspace). The declaration
 * also becomes the route's OpenAPI `security`. The API refuses to start when an `/api` route
 * declares nothing (a new route is closed until its author says who may call it).
 *
 * Below the declarations: the checks of a user's login (`requireUser`, `requireWorkspaceAdmin`,
 * `requireWorkspaceMember`; §5.2 rule 2, §5.6: a workspace API key is refused with 403 there, it
 * can never manage keys, team or settings) and the workspace a request names (`X-Workspace`, or
 * `?workspace=`, by slug; when absent and the user belongs to exactly one workspace, that one;
 * a request naming two different workspaces is a 400 naming both). The key check itself is in
 * plugins/workspace-auth.ts.
 */
import type {
  FastifyInstance,
  FastifyRequest,
  RouteOptions,
  onRequestHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import { TOKEN_PREFIX, type Scope } from '../../domain/access/api-keys.js';
import { verifyAccessSession } from '../../domain/access/login-sessions.js';
import { membershipsOf } from '../../domain/access/workspaces.js';
import { AppError } from '../../lib/errors.js';
import { requireServiceKey } from '../../domain/service-keys/service-key-auth.js';
import { ServiceKeyVerifier } from '../../domain/service-keys/verifier.js';

/**
 * The internal callers whose service keys the account API takes (target `account-api` in the
 * service-key registry, domain/service-keys/inventory.ts), and their OpenAPI security schemes.
 */
const serviceCallers = {
  /** The operator CLI and the ops API's other callers. */
  operator: { scheme: 'opsKey' },
  /** The `client.provisioned` consumer (POST /api/webhooks/provisioned). */
  provisioning: { scheme: 'provisioningKey' },
  /** The tenant ERPs' SaaS endpoints (/svc/saas/… on each tenant host) asking for tier and subscription data. */
  erp: { scheme: 'erpKey' },
  /** Platform jobs posting the tenant ERPs' legacy callbacks (/svc/saas/job/<id>/update, /svc/saas/backup/callback). */
  'saas-jobs': { scheme: 'saasJobsKey' },
} as const;
export const ACCOUNT_API_TARGET = 'account-api';
export type ServiceCaller = keyof typeof serviceCallers;

export type Access =
  | { kind: 'public' }
  | { kind: 'user'; role: 'member' | 'admin'; workspace?: boolean }
  | { kind: 'workspaceKey'; scope: Scope | null }
  | { kind: 'adminOrKey'; scope: Scope }
  | { kind: 'serviceKey'; callers: readonly ServiceCaller[] };

export const access = {
  public: { kind: 'public' },
  user: { kind: 'user', role: 'member' },
  member: { kind: 'user', role: 'member', workspace: true },
  admin: { kind: 'user', role: 'admin', workspace: true },
  /** Checked by `keyCheck` (plugins/workspace-auth.ts), put on the route by `attachKeyChecks` (plugins/workspace-auth.ts). */
  key: (scope: Scope | null): Access => ({ kind: 'workspaceKey', scope }),
  /** DESIGN §5: the one exception where a key may manage something (its own workspace's webhooks). */
  adminOrKey: (scope: Scope): Access => ({ kind: 'adminOrKey', scope }),
  service: (...callers: [ServiceCaller, ...ServiceCaller[]]): Access => ({ kind: 'serviceKey', callers }),
} as const satisfies Record<string, Access | ((...args: never[]) => Access)>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call this route (see api/plugins/access.ts); required on every /api route. */
    access?: Access;
  }
  interface FastifyInstance {
    /** Every route's declared access, as registered (for the security tests and the docs). */
    accessTable: { method: string; url: string; access: Access | undefined }[];
    /** The account API's service-key check (target `account-api`). */
    serviceKeys: ServiceKeyVerifier;
  }
}

// ---- the workspace a request names ----

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

const NONE: readonly string[] = [];

/** Every distinct non-empty workspace value of the request, header first; usually none. */
export function workspacesNamed(req: FastifyRequest): readonly string[] {
  const header = req.headers['x-workspace'];
  const query = (req.query as { workspace?: unknown } | undefined)?.workspace;
  // the common case, checked in place: this runs on every request of a workspace route
  if (header === undefined && query === undefined) return NONE;
  const values: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string' && v !== '' && !values.includes(v)) values.push(v);
  };
  for (const h of [header].flat()) if (typeof h === 'string') h.split(',').forEach((v) => add(v.trim()));
  for (const q of [query].flat()) add(q);
  return values;
}

/** The 400 for a request naming more than one workspace. */
export function ambiguousWorkspace(values: readonly string[]): AppError {
  return new AppError(
    'BAD_REQUEST',
    `The request names more than one workspace (${values.map((v) => `"${v}"`).join(' and ')}) in X-Workspace and ?workspace=; name one.`,
    { workspaces: values },
  );
}

/** The one workspace the request names (undefined when none); 400 when it names several. */
export function namedWorkspace(req: FastifyRequest): string | undefined {
  const values = workspacesNamed(req);
  if (values.length > 1) throw ambiguousWorkspace(values);
  return values[0];
}

/** An onRequest hook: refuses a request naming several workspaces before its body is read or validated. */
export async function refuseAmbiguousWorkspace(req: FastifyRequest): Promise<void> {
  namedWorkspace(req);
}

// ---- a user's login ----

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser: the logged-in user and the session (refresh-token family) of the access token. */
    user?: { id: string; sessionId: string };
    /** Set by requireWorkspaceAdmin: the workspace the admin acts on. */
    adminWorkspace?: { id: string; slug: string };
    /** Set by requireWorkspaceMember and requireWorkspaceAdmin: the workspace named and the user's role in it. */
    memberWorkspace?: { id: string; slug: string; role: 'admin' | 'member' };
  }
}

export function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

export async function requireUser(req: FastifyRequest): Promise<void> {
  const token = bearer(req);
  if (!token)
    throw new AppError(
      'UNAUTHORIZED',
      'This endpoint needs an interactive login: send the access token from POST /api/auth/login as Authorization: Bearer.',
    );
  if (token.startsWith(TOKEN_PREFIX)) {
    throw new AppError(
      'FORBIDDEN',
      'Workspace API keys cannot do this; it needs an interactive login (POST /api/auth/login).',
    );
  }
  const { userId, sessionId } = await verifyAccessSession(req.server.deps.pool, req.server.deps.config, token);
  req.user = { id: userId, sessionId };
}

/** Run after requireUser: the user must be an admin of the workspace named by X-Workspace. */
export async function requireWorkspaceAdmin(req: FastifyRequest): Promise<void> {
  const row = await workspaceMembership(req);
  if (row.role !== 'admin') throw new AppError('FORBIDDEN', `Only admins of workspace "${row.slug}" can do this.`);
  req.adminWorkspace = { id: row.id, slug: row.slug };
}

/** Run after requireUser: the user must be a member (any role) of the workspace named by X-Workspace. */
export async function requireWorkspaceMember(req: FastifyRequest): Promise<void> {
  await workspaceMembership(req);
}

async function workspaceMembership(
  req: FastifyRequest,
): Promise<{ id: string; slug: string; role: 'admin' | 'member' }> {
  if (!req.user) throw new AppError('UNAUTHORIZED', 'This endpoint needs an interactive login.');
  const slug = namedWorkspace(req);
  const rows = await membershipsOf(req.server.deps.pool, req.user.id, slug);
  if (!slug && rows.length > 1) {
    throw new AppError(
      'BAD_REQUEST',
      `You belong to several workspaces (${rows.map((r) => r.slug).join(', ')}); name one in the X-Workspace header.`,
    );
  }
  const row = rows[0];
  if (!row)
    throw new AppError(
      'FORBIDDEN',
      slug ? `You are not a member of workspace "${slug}".` : 'You are not a member of any workspace.',
    );
  const membership = {
    id: row.id,
    slug: row.slug,
    role: row.role === 'admin' ? ('admin' as const) : ('member' as const),
  };
  req.memberWorkspace = membership;
  return membership;
}

// ---- the declarations become hooks ----

/** The OpenAPI `security` of a declaration. */
function security(declared: Access): Record<string, string[]>[] {
  switch (declared.kind) {
    case 'public':
      return [];
    case 'user':
      return [{ userToken: [] }];
    case 'workspaceKey':
      return [{ workspaceKey: [] }];
    case 'adminOrKey':
      return [{ userToken: [] }, { workspaceKey: [] }];
    case 'serviceKey':
      return declared.callers.map((caller) => ({ [serviceCallers[caller].scheme]: [] }));
  }
}

async function userUnlessKey(req: FastifyRequest) {
  if (presentsWorkspaceKey(req)) return;
  await requireUser(req);
  await refuseAmbiguousWorkspace(req);
}
async function adminUnlessKey(req: FastifyRequest) {
  if (!presentsWorkspaceKey(req)) await requireWorkspaceAdmin(req);
}

export const accessControl = fp(
  async (app: FastifyInstance) => {
    app.decorate('accessTable', []);
    // the account API's accepted service keys, from the registry (reloaded on NOTIFY and every
    // SERVICE_KEY_REFRESH_MS); loaded once the app is ready, so a failing load stops the start
    let verifier: ServiceKeyVerifier | undefined;
    app.addHook('onReady', async () => {
      const { config, pool } = app.deps;
      verifier = await ServiceKeyVerifier.forService(ACCOUNT_API_TARGET, pool, config, app.log);
    });
    app.addHook('onClose', async () => verifier?.close());
    app.decorate('serviceKeys', {
      getter: () => {
        if (!verifier) throw new Error('the service-key verifier starts when the app is ready');
        return verifier;
      },
    });
    // one hook per set of callers (`ours` recognises them on the HEAD route Fastify derives from a GET)
    const serviceHooks = new Map<string, onRequestHookHandler>();
    const serviceHook = (callers: readonly ServiceCaller[]) => {
      const id = [...callers].sort().join(',');
      let hook = serviceHooks.get(id);
      if (!hook)
        serviceHooks.set(id, (hook = requireServiceKey(() => app.serviceKeys, callers) as onRequestHookHandler));
      return hook;
    };
    const ours = (h: unknown) =>
      [
        requireUser,
        refuseAmbiguousWorkspace,
        requireWorkspaceAdmin,
        requireWorkspaceMember,
        userUnlessKey,
        adminUnlessKey,
      ].includes(h as never) || [...serviceHooks.values()].includes(h as never);

    app.addHook('onRoute', (route: RouteOptions) => {
      const declared = route.config?.access;
      for (const method of [route.method].flat()) app.accessTable.push({ method, url: route.url, access: declared });
      if (!declared) {
        if (route.url === '/api' || route.url.startsWith('/api/')) {
          throw new Error(
            `${[route.method].flat().join(',')} ${route.url} declares no access: say who may call it with config.access (api/plugins/access.ts)`,
          );
        }
        return;
      }
      route.schema = { ...route.schema, security: security(declared) };
      // Fastify derives the HEAD route from the GET route's options, hooks included
      if ([route.onRequest].flat().some(ours)) return;
      const existing = [route.onRequest ?? []].flat();
      if (declared.kind === 'user') {
        // the membership look-up reads X-Workspace / ?workspace=, so it runs once they are validated;
        // naming two workspaces is refused before that (a repeated ?workspace= would fail validation
        // without saying which values clash)
        const workspaceCheck =
          declared.role === 'admin' ? requireWorkspaceAdmin : declared.workspace ? requireWorkspaceMember : undefined;
        route.onRequest = [
          requireUser as onRequestHookHandler,
          ...(workspaceCheck ? [refuseAmbiguousWorkspace as onRequestHookHandler] : []),
          ...existing,
        ];
        if (workspaceCheck)
          route.preHandler = [workspaceCheck as preHandlerHookHandler, ...[route.preHandler ?? []].flat()];
      } else if (declared.kind === 'adminOrKey') {
        // a workspace key is checked by plugins/workspace-auth.ts; anything else must be an admin's login
        route.onRequest = [userUnlessKey as onRequestHookHandler, ...existing];
        route.preHandler = [adminUnlessKey as preHandlerHookHandler, ...[route.preHandler ?? []].flat()];
      } else if (declared.kind === 'serviceKey') {
        route.onRequest = [serviceHook(declared.callers), ...existing];
      }
      // workspaceKey: plugins/workspace-auth.ts attaches the key check, limits and execution log
    });
  },
  { name: 'access', dependencies: [] },
);
