/**
 * Route security, per class of route, over every route the account API registers: each /api route
 * declares who may call it (api/plugins/access.ts), and each class refuses the callers it must.
 * The table of routes comes from the running API itself, so a new route is covered the day it is
 * added; the API refuses to start when an /api route declares nothing.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessControl, access, type Access } from '../../../api/plugins/access.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { addUser, adminOfNewWorkspace, call, createKey, login, type HttpResult } from '../../support/workspace-api.js';
import { testKeys } from '../../support/service-keys.js';

let api: TestApi;
let a: Awaited<ReturnType<typeof adminOfNewWorkspace>>;
let b: Awaited<ReturnType<typeof adminOfNewWorkspace>>;
let keyA: string;
let keyANoScope: string;
let keyB: string;
let memberA: string;
let keyIdA: string;
let routes: { method: string; url: string; access: Access }[];

beforeAll(async () => {
  api = await startTestApi();
  a = await adminOfNewWorkspace(api.base, api.pool);
  b = await adminOfNewWorkspace(api.base, api.pool);
  const created = await createKey(api.base, a.accessToken, { name: 'all', scopes: ['*'] });
  keyA = created.token;
  keyIdA = created.id;
  // a scope no key route of the Workspace API needs here
  keyANoScope = (await createKey(api.base, a.accessToken, { name: 'narrow', scopes: ['webhooks:write'] })).token;
  keyB = (await createKey(api.base, b.accessToken, { name: 'all', scopes: ['*'] })).token;
  memberA = await login(api.base, await addUser(api.pool, [{ workspaceId: a.workspace.id, role: 'member' }]));
  routes = api.app.accessTable
    .filter((r) => r.method !== 'HEAD' && (r.url === '/api' || r.url.startsWith('/api/')))
    .map((r) => ({ ...r, access: r.access! }));
});

afterAll(async () => {
  await api?.close();
});

/** The route's path with its parameters filled in for workspace A. */
const pathOf = (url: string) =>
  url
    .replace(':slug', a.workspace.slug)
    .replace(':id', keyIdA)
    .replace(':userId', '00000000-0000-4000-8000-000000000001')
    .replace(/:\w+/g, 'x1');
/** A body each route takes as valid (the workspace-role check runs once the request is validated). */
const validBodies: Record<string, unknown> = {
  'POST /api/portal/team/invite': { email: 'probe@example.test' },
  'PUT /api/portal/settings': { displayName: 'probe' },
  'PATCH /api/portal/team/:userId': { role: 'member' },
  'POST /api/portal/team/invitations/accept': { token: 'x'.repeat(43), password: 'probe' },
};
const bodyOf = (method: string, url: string) =>
  validBodies[`${method} ${url}`] ?? (method === 'POST' || method === 'PUT' ? { name: 'probe' } : undefined);
const send = (
  route: { method: string; url: string },
  opts: { token?: string; headers?: Record<string, string> } = {},
) => call(api.base, route.method, pathOf(route.url), { ...opts, body: bodyOf(route.method, route.url) });
const routesOf = (kind: Access['kind'], pick: (r: Access) => boolean = () => true) =>
  routes.filter((r) => r.access.kind === kind && pick(r.access));
const label = (r: { method: string; url: string }) => `${r.method} ${r.url}`;

function expectProblem(res: HttpResult, status: number, route: { method: string; url: string }) {
  expect(res.status, `${label(route)}: ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.headers.get('content-type'), label(route)).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, type: expect.any(String), detail: expect.any(String) });
}

it('every /api route declares who may call it, and only the login round trip and the e-mailed links are public', () => {
  expect(routes.length).toBeGreaterThan(15);
  expect(routes.filter((r) => !r.access)).toEqual([]);
  expect(routesOf('public').map(label).sort()).toEqual([
    // which ways to sign in the sign-in page offers
    'GET /api/auth/methods',
    'GET /api/auth/oidc/callback',
    'GET /api/auth/oidc/start',
    'POST /api/auth/login',
    'POST /api/auth/logout',
    // a forgotten password: the same answer for any address, limited per address and client (portal-activation.test.ts)
    'POST /api/auth/password/forgot',
    'POST /api/auth/password/reset',
    'POST /api/auth/refresh',
    'POST /api/portal/profile/email/confirm',
    'POST /api/portal/team/invitations/accept',
    // what a link can still do, asked without using it (portal-activation.test.ts)
    'POST /api/portal/team/invitations/check',
    // a new link in place of a dead one, to that link's own address only
    'POST /api/portal/team/invitations/renew',
    // no platform credential: every event must carry Stripe's signature over its raw body (billing-api.test.ts)
    'POST /api/webhooks/stripe',
  ]);
});

it('an /api route that declares nothing stops the server from starting', async () => {
  const app = Fastify();
  await app.register(accessControl);
  // a route plugin, as the API's own are registered
  void app.register(async (routes) => {
    routes.get('/elsewhere', { config: { access: access.public } }, async () => 'fine');
    routes.get('/api/forgotten', async () => 'open');
  });
  await expect(app.ready()).rejects.toThrow(/GET \/api\/forgotten declares no access/);
  await app.close().catch(() => {});
});

describe('every route but the public ones', () => {
  it('refuses a request without credentials with 401', async () => {
    for (const route of routes.filter((r) => r.access.kind !== 'public')) expectProblem(await send(route), 401, route);
  });
});

describe('routes for a logged-in user', () => {
  it('refuse a workspace key with 403 (keys never manage a workspace) and a service key with 401', async () => {
    for (const route of routesOf('user')) {
      expectProblem(await send(route, { token: keyA }), 403, route);
      expectProblem(await send(route, { headers: { 'x-api-key': testKeys.operator } }), 401, route);
    }
  });

  it('for admins: refuse a member of the workspace and the admin of another one with 403', async () => {
    const adminRoutes = routesOf('user', (x) => x.kind === 'user' && x.role === 'admin');
    expect(adminRoutes.length).toBeGreaterThan(2);
    for (const route of adminRoutes) {
      expectProblem(await send(route, { token: memberA, headers: { 'x-workspace': a.workspace.slug } }), 403, route);
      expectProblem(
        await send(route, { token: b.accessToken, headers: { 'x-workspace': a.workspace.slug } }),
        403,
        route,
      );
    }
  });

  it('for members of a workspace: refuse the admin of another one with 403', async () => {
    const memberRoutes = routesOf('user', (x) => x.kind === 'user' && x.role === 'member' && x.workspace === true);
    expect(memberRoutes.length).toBeGreaterThan(2);
    for (const route of memberRoutes) {
      expectProblem(
        await send(route, { token: b.accessToken, headers: { 'x-workspace': a.workspace.slug } }),
        403,
        route,
      );
    }
  });
});

describe('Workspace API routes (workspace keys)', () => {
  it('refuse a user access token and a service key with 401', async () => {
    for (const route of routesOf('workspaceKey')) {
      expectProblem(await send(route, { token: a.accessToken }), 401, route);
      expectProblem(await send(route, { headers: { 'x-api-key': testKeys.operator } }), 401, route);
    }
  });

  it('refuse a key without the scope the route needs with 403 naming the scope', async () => {
    const scoped = routesOf('workspaceKey', (x) => x.kind === 'workspaceKey' && x.scope !== null);
    expect(scoped.length).toBeGreaterThan(2);
    for (const route of scoped) {
      const res = await send(route, { token: keyANoScope });
      expectProblem(res, 403, route);
      expect(res.body.requiredScope).toBe((route.access as { scope: string }).scope);
    }
  });

  it("refuse another workspace's key on a workspace's own routes with 403", async () => {
    const own = routesOf('workspaceKey').filter((r) => r.url.includes(':slug'));
    expect(own.length).toBeGreaterThan(2);
    for (const route of own) expectProblem(await send(route, { token: keyB }), 403, route);
  });
});

describe('internal routes (service keys)', () => {
  it("refuse a wrong key, a workspace key, a user token and another caller's key with 401", async () => {
    const internal = routesOf('serviceKey');
    expect(internal.length).toBeGreaterThan(5);
    for (const route of internal) {
      const callers = (route.access as { callers: readonly string[] }).callers;
      const otherCallersKey = callers.includes('operator') ? testKeys.provisioning : testKeys.operator;
      expectProblem(await send(route, { headers: { 'x-api-key': 'not-the-key' } }), 401, route);
      expectProblem(await send(route, { headers: { 'x-api-key': otherCallersKey } }), 401, route);
      expectProblem(await send(route, { token: keyA }), 401, route);
      expectProblem(await send(route, { token: a.accessToken }), 401, route);
    }
  });
});
