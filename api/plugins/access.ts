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
 */
import type {
  FastifyInstance,
  FastifyRequest,
  RouteOptions,
  onRequestHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import type { Scope } from '../../domain/access/api-keys.js';
import { requireServiceKey } from '../../domain/service-keys/service-key-auth.js';
import { ServiceKeyVerifier } from '../../domain/service-keys/verifier.js';
import { requireUser, requireWorkspaceAdmin, requireWorkspaceMember } from './user-auth.js';
import { refuseAmbiguousWorkspace } from './named-workspace.js';
import { presentsWorkspaceKey } from './workspace-auth.js';

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
