/**
 * Workspace key verification over real HTTP, with two API replicas sharing the real PostgreSQL
 * and Redis: one 401 for every bad key, revocation seen by the other replica on the very next
 * request (its cache warm), scopes, the workspace binding, and last_used_at.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let pool: Pool;
let replicaA: TestApi;
let replicaB: TestApi;
let baseA: string;
let baseB: string;

beforeAll(async () => {
  [replicaA, replicaB] = await Promise.all([
    startTestApi({ API_KEY_USAGE_FLUSH_MS: '200' }),
    startTestApi({ API_KEY_USAGE_FLUSH_MS: '200' }),
  ]);
  ({ pool, base: baseA } = replicaA);
  baseB = replicaB.base;
});

afterAll(async () => {
  await replicaA?.close();
  await replicaB?.close();
});

describe('a valid key', () => {
  it('reaches its own workspace; the request knows the workspace and the key (prefix, scopes), never the token', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken, { name: 'k', scopes: ['dashboard:read', 'banking:read'] });
    for (const base of [baseA, baseB, baseB]) {
      const res = await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        workspace: { id: workspace.id, slug: workspace.slug },
        key: { id: key.id, prefix: key.prefix, scopes: ['dashboard:read', 'banking:read'] },
      });
    }
  });

  it('updates last_used_at within a flush interval, without a write per request', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken);
    const before = new Date();
    await call(baseB, 'GET', '/api/portal/apikeys/self', { token: key.token });
    await expect
      .poll(
        async () => {
          const list = await call(baseA, 'GET', '/api/portal/apikeys', { token: accessToken });
          return list.body.items[0].lastUsedAt ? new Date(list.body.items[0].lastUsedAt).getTime() : 0;
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBeGreaterThanOrEqual(before.getTime() - 1000);
  });
});

describe('bad keys: one 401 that does not say which', () => {
  it('answers a missing, malformed, unknown, wrong and revoked key with the same problem body', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const revoked = await createKey(baseA, accessToken);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: revoked.token })).status).toBe(200);
    expect((await call(baseA, 'DELETE', `/api/portal/apikeys/${revoked.id}`, { token: accessToken })).status).toBe(204);
    const live = await createKey(baseA, accessToken);
    // right prefix, wrong rest: the look-up finds the key and bcrypt refuses it
    const last = live.token.at(-1) === 'A' ? 'B' : 'A';
    const wrong = live.token.slice(0, -1) + last;

    const cases: Record<string, Record<string, string>> = {
      missing: {},
      'not bearer': { authorization: `Basic ${live.token}` },
      malformed: { authorization: 'Bearer ws_live_short' },
      'lower-case base32': { authorization: `Bearer ${live.token.toLowerCase().replace('ws_live_', 'ws_live_')}` },
      unknown: { authorization: `Bearer ws_live_${'A'.repeat(52)}` },
      wrong: { authorization: `Bearer ${wrong}` },
      revoked: { authorization: `Bearer ${revoked.token}` },
    };
    const bodies = [];
    for (const [label, headers] of Object.entries(cases)) {
      const res = await call(baseB, 'GET', '/api/portal/apikeys/self', { headers });
      expect(res.status, label).toBe(401);
      expect(res.headers.get('www-authenticate'), label).toBe('Bearer');
      expect(res.headers.get('content-type'), label).toContain('application/problem+json');
      bodies.push({ ...res.body, requestId: undefined });
    }
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({
      status: 401,
      code: 'UNAUTHORIZED',
      detail: 'The workspace API key is missing, malformed, unknown or revoked.',
    });
    // the live key still works: a wrong guess at it does not lock it
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: live.token })).status).toBe(200);
    // the scheme's name is case-insensitive (RFC 9110 §11.1)
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const headers = { authorization: `${scheme} ${live.token}` };
      expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { headers })).status, scheme).toBe(200);
    }
  });

  it('does not let a user access token in where a workspace key is needed', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    const res = await call(baseA, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: accessToken });
    expect(res.status).toBe(401);
  });
});

describe('revocation across replicas', () => {
  it('a DELETE on replica A makes replica B, its cache warm, answer 401 to the very next request', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken);
    const other = await createKey(baseA, accessToken);
    // warm both replicas' caches
    for (let i = 0; i < 3; i++) {
      expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
      expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
    }
    expect((await call(baseA, 'DELETE', `/api/portal/apikeys/${key.id}`, { token: accessToken })).status).toBe(204);

    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(401);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(401);
    // and it stays revoked; the workspace's other key is untouched
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(401);
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: other.token })).status).toBe(200);
  });

  it('also on a keep-alive connection that sent the same key just before', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const self = () =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const req = http.get(
          new URL('/api/portal/apikeys/self', baseB),
          { agent, headers: { authorization: `Bearer ${key.token}` } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, reused: req.reusedSocket }));
          },
        );
        req.on('error', reject);
      });
    try {
      expect((await self()).status).toBe(200);
      expect(await self()).toEqual({ status: 200, reused: true });
      expect((await call(baseA, 'DELETE', `/api/portal/apikeys/${key.id}`, { token: accessToken })).status).toBe(204);
      expect(await self()).toEqual({ status: 401, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('also when the DELETE goes to replica B and the key was only ever used on A', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
    expect((await call(baseB, 'DELETE', `/api/portal/apikeys/${key.id}`, { token: accessToken })).status).toBe(204);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(401);
  });
});

describe('scopes and the workspace binding', () => {
  const dashboards = ['kpis', 'cashflow', 'alerts'];

  it.each(dashboards)('GET /api/portal/odoo/:slug/%s without dashboard:read: 403 naming the scope', async (board) => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken, { name: 'bank only', scopes: ['banking:read'] });
    const res = await call(baseB, 'GET', `/api/portal/odoo/${workspace.slug}/${board}`, { token: key.token });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'dashboard:read' });
    expect(res.body.detail).toContain('"dashboard:read"');
  });

  it.each([
    ['dashboard:read', ['dashboard:read']],
    ['*', ['*']],
  ])('GET /api/portal/odoo/:slug/kpis with %s passes authorization', async (_label, scopes) => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken, { name: 'k', scopes });
    const res = await call(baseB, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: key.token });
    expect([401, 403, 429]).not.toContain(res.status);
  });

  it.each(dashboards)('GET /api/portal/odoo/<another workspace>/%s: 403, even with scope *', async (board) => {
    const mine = await adminOfNewWorkspace(baseA, pool);
    const theirs = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, mine.accessToken, { name: 'all', scopes: ['*'] });
    const res = await call(baseB, 'GET', `/api/portal/odoo/${theirs.workspace.slug}/${board}`, { token: key.token });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain(`cannot reach workspace "${theirs.workspace.slug}"`);
  });

  it('guards the HEAD twin of a GET route the same way', async () => {
    const res = await fetch(new URL('/api/portal/apikeys/self', baseA), { method: 'HEAD' });
    expect(res.status).toBe(401);
  });

  it('documents the key-guarded routes with the workspaceKey scheme and the portal routes with the login token', async () => {
    const doc = (await call(baseA, 'GET', '/docs/json')).body;
    expect(doc.paths['/api/portal/odoo/{slug}/kpis'].get.security).toEqual([{ workspaceKey: [] }]);
    expect(doc.paths['/api/portal/apikeys/self'].get.security).toEqual([{ workspaceKey: [] }]);
    expect(doc.paths['/api/portal/apikeys'].post.security).toEqual([{ userToken: [] }]);
    expect(doc.components.securitySchemes.userToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
