/**
 * Key management by tenant admins over real HTTP: create (token once, default scope, scope
 * checks), list (never a token or hash), revoke; who may do it and for which workspace.
 */
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { addUser, addWorkspace, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';

let pool: Pool;
let api: TestApi;
let base: string;

beforeAll(async () => {
  api = await startTestApi();
  ({ pool, base } = api);
});

afterAll(() => api?.close());

describe('POST /api/portal/apikeys (happy)', () => {
  it('creates a key: 201, the ws_live_ token once, scope dashboard:read by default, only a bcrypt hash stored', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const res = await call(base, 'POST', '/api/portal/apikeys', { token: accessToken, body: { name: 'reporting' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ name: 'reporting', scopes: ['dashboard:read'], lastUsedAt: null });
    expect(res.body.token).toMatch(/^ws_live_[A-Z2-7]{52}$/);
    expect(res.body.prefix).toBe(res.body.token.slice(0, 16));

    const { rows } = await pool.query('SELECT * FROM workspace_api_keys WHERE id = $1', [res.body.id]);
    expect(rows[0].workspace_id).toBe(workspace.id);
    expect(JSON.stringify(rows[0])).not.toContain(res.body.token.slice(16));
    expect(await bcrypt.compare(res.body.token, rows[0].token_hash)).toBe(true);
  });

  it('keeps the scopes given, without duplicates', async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken, {
      name: 'agents',
      scopes: ['agents:invoke', 'dashboard:read', 'agents:invoke'],
    });
    expect(key.scopes).toEqual(['agents:invoke', 'dashboard:read']);
  });

  it('issues a different token every time', async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const a = await createKey(base, accessToken);
    const b = await createKey(base, accessToken);
    expect(a.token).not.toBe(b.token);
    expect(a.prefix).not.toBe(b.prefix);
  });
});

describe('POST /api/portal/apikeys (errors)', () => {
  it.each([
    ['an unknown scope', { name: 'k', scopes: ['dashboard:read', 'billing:write'] }, 'billing:write'],
    ['an empty scope list', { name: 'k', scopes: [] }, 'body.scopes must have at least one item'],
    ['no name', { scopes: ['dashboard:read'] }, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['an extra field', { name: 'k', workspace_id: 'x' }, 'workspace_id'],
  ])('answers 400 naming the problem for %s, and creates nothing', async (_label, body, mentioned) => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const res = await call(base, 'POST', '/api/portal/apikeys', { token: accessToken, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(JSON.stringify(res.body)).toContain(mentioned);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM workspace_api_keys WHERE workspace_id = $1', [
      workspace.id,
    ]);
    expect(rows[0].n).toBe(0);
  });
});

describe('GET /api/portal/apikeys', () => {
  it("lists the workspace's keys with prefix, scopes and times, never the token or its hash", async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const a = await createKey(base, accessToken, { name: 'first' });
    const b = await createKey(base, accessToken, { name: 'second', scopes: ['*'] });
    const res = await call(base, 'GET', '/api/portal/apikeys', { token: accessToken });
    expect(res.status).toBe(200);
    expect(res.body.items.map((k: { name: string }) => k.name)).toEqual(['first', 'second']);
    for (const item of res.body.items)
      expect(Object.keys(item).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix', 'scopes']);
    const text = JSON.stringify(res.body);
    for (const token of [a.token, b.token]) expect(text).not.toContain(token.slice(16));
    expect(text).not.toContain('$2b$');
  });

  it("does not show another workspace's keys", async () => {
    const one = await adminOfNewWorkspace(base, pool);
    const two = await adminOfNewWorkspace(base, pool);
    await createKey(base, one.accessToken, { name: 'one' });
    const res = await call(base, 'GET', '/api/portal/apikeys', { token: two.accessToken });
    expect(res.body.items).toEqual([]);
  });
});

describe('DELETE /api/portal/apikeys/:id', () => {
  it('revokes: 204, the row is gone, the key gets 401 from the next request on', async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken);
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
    const res = await call(base, 'DELETE', `/api/portal/apikeys/${key.id}`, { token: accessToken });
    expect(res.status).toBe(204);
    expect((await pool.query('SELECT 1 FROM workspace_api_keys WHERE id = $1', [key.id])).rowCount).toBe(0);
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(401);
  });

  it.each([
    ['an unknown id', () => '00000000-0000-4000-8000-000000000000', 404],
    ['not a uuid', () => 'abc', 400],
  ])('answers %s with a problem', async (_label, id, status) => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const res = await call(base, 'DELETE', `/api/portal/apikeys/${id()}`, { token: accessToken });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it("cannot revoke another workspace's key (404) and that key keeps working", async () => {
    const one = await adminOfNewWorkspace(base, pool);
    const two = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, one.accessToken);
    const res = await call(base, 'DELETE', `/api/portal/apikeys/${key.id}`, { token: two.accessToken });
    expect(res.status).toBe(404);
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
  });
});

describe('who may manage keys (security)', () => {
  const routes = [
    ['GET', '/api/portal/apikeys', undefined],
    ['POST', '/api/portal/apikeys', { name: 'x' }],
    ['DELETE', '/api/portal/apikeys/00000000-0000-4000-8000-000000000000', undefined],
    ['GET', '/api/portal/execution-log', undefined],
  ] as const;

  it.each(routes)('%s %s: a workspace key, even with scope *, gets 403', async (method, path, body) => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken, { name: 'all', scopes: ['*'] });
    const res = await call(base, method, path, { token: key.token, body });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('interactive login');
  });

  it.each(routes)('%s %s: no login gets 401', async (method, path, body) => {
    const res = await call(base, method, path, { body });
    expect(res.status).toBe(401);
  });

  it.each(routes)('%s %s: a member who is not admin gets 403', async (method, path, body) => {
    const ws = await addWorkspace(pool);
    const member = await addUser(pool, [{ workspaceId: ws.id, role: 'member' }]);
    const res = await call(base, method, path, { token: await login(base, member), body });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('Only admins');
  });

  it('an admin of several workspaces must name one (400), may act on one where admin, not on one where member', async () => {
    const a = await addWorkspace(pool);
    const b = await addWorkspace(pool);
    const user = await addUser(pool, [
      { workspaceId: a.id, role: 'admin' },
      { workspaceId: b.id, role: 'member' },
    ]);
    const token = await login(base, user);
    const unnamed = await call(base, 'POST', '/api/portal/apikeys', { token, body: { name: 'k' } });
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.detail).toContain('X-Workspace');

    const inA = await call(base, 'POST', '/api/portal/apikeys', {
      token,
      body: { name: 'k' },
      headers: { 'x-workspace': a.slug },
    });
    expect(inA.status).toBe(201);
    const self = await call(base, 'GET', '/api/portal/apikeys/self', { token: inA.body.token });
    expect(self.body.workspace).toEqual({ id: a.id, slug: a.slug });

    const byQuery = await call(base, 'GET', `/api/portal/apikeys?workspace=${a.slug}`, { token });
    expect(byQuery.body.items).toHaveLength(1);

    const inB = await call(base, 'POST', '/api/portal/apikeys', {
      token,
      body: { name: 'k' },
      headers: { 'x-workspace': b.slug },
    });
    expect(inB.status).toBe(403);
    const elsewhere = await call(base, 'GET', '/api/portal/apikeys', { token, headers: { 'x-workspace': 'not-mine' } });
    expect(elsewhere.status).toBe(403);
  });
});
