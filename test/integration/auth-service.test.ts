/**
 * The auth service over real HTTP (its own Fastify server on its own port) with the account API
 * beside it, on the run's real PostgreSQL and Redis: login, refresh (rotation, reuse detection),
 * status and the OpenAPI page, the service-key check, and that both share one set of sessions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuth } from '../../services/auth/server.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { freePort } from '../../scripts/local-servers.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { testKeys } from '../support/service-keys.js';
import { addUser, addWorkspace, call } from '../support/workspace-api.js';

let api: TestApi;
let auth: Awaited<ReturnType<typeof startAuth>>;
let authUrl: string;
let key: string;

beforeAll(async () => {
  const port = await freePort();
  authUrl = `http://127.0.0.1:${port}`;
  api = await startTestApi({ AUTH_PORT: String(port), AUTH_URL: authUrl });
  auth = await startAuth(api.cfg);
  key = (await new PgSecretStore(api.pool, api.cfg.SECRETS_KEY).current('operator', 'auth')).key;
});
afterAll(async () => {
  await auth?.close();
  await api?.close();
});

const viaAuth = (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { 'x-api-key': key },
) => call(authUrl, method, path, { body, headers });

async function someone() {
  const ws = await addWorkspace(api.pool);
  return addUser(api.pool, [{ workspaceId: ws.id, role: 'admin' }]);
}

describe('POST /api/v1/auth/login', () => {
  it('returns an access token the account API accepts, and a refresh token in the body', async () => {
    const user = await someone();
    const res = await viaAuth('POST', '/api/v1/auth/login', { email: user.email, password: user.password });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      tokenType: 'Bearer',
      expiresIn: api.cfg.ACCESS_TOKEN_TTL_SECONDS,
      refreshExpiresIn: api.cfg.REFRESH_TOKEN_TTL_SECONDS,
      user: { id: user.id, email: user.email },
    });
    expect(res.body.refreshToken).toEqual(expect.any(String));
    expect(res.headers.get('cache-control')).toBe('no-store');
    const me = await call(api.base, 'GET', '/api/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
  });

  it('answers a wrong password and an unknown e-mail with the same 401, and throttles guessing (429)', async () => {
    const user = await someone();
    const wrong = await viaAuth('POST', '/api/v1/auth/login', { email: user.email, password: 'wrong' });
    const unknown = await viaAuth('POST', '/api/v1/auth/login', { email: 'nobody@example.test', password: 'wrong' });
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.body.detail).toBe(unknown.body.detail);
    for (let i = 0; i < 9; i++)
      await viaAuth('POST', '/api/v1/auth/login', { email: user.email, password: `guess-${i}` });
    const blocked = await viaAuth('POST', '/api/v1/auth/login', { email: user.email, password: user.password });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it.each([
    ['no body', undefined],
    ['no password', { email: 'a@b.test' }],
    ['an extra field', { email: 'a@b.test', password: 'x', admin: true }],
  ])('answers 400 with a problem body for %s', async (_label, body) => {
    const res = await viaAuth('POST', '/api/v1/auth/login', body, {
      'x-api-key': key,
      'content-type': 'application/json',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('POST /api/v1/auth/refresh', () => {
  it('rotates; a spent refresh token ends the whole session, its access tokens included', async () => {
    const user = await someone();
    const login = await viaAuth('POST', '/api/v1/auth/login', { email: user.email, password: user.password });
    const first = login.body.refreshToken;
    const refreshed = await viaAuth('POST', '/api/v1/auth/refresh', { refreshToken: first });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refreshToken).not.toBe(first);
    expect((await call(api.base, 'GET', '/api/auth/me', { token: refreshed.body.accessToken })).status).toBe(200);

    const replay = await viaAuth('POST', '/api/v1/auth/refresh', { refreshToken: first });
    expect(replay.status).toBe(401);
    expect((await viaAuth('POST', '/api/v1/auth/refresh', { refreshToken: refreshed.body.refreshToken })).status).toBe(
      401,
    );
    expect((await call(api.base, 'GET', '/api/auth/me', { token: refreshed.body.accessToken })).status).toBe(401);
  });

  it("refreshes a session started at the account API's /api/auth/login (one set of sessions)", async () => {
    const user = await someone();
    const login = await call(api.base, 'POST', '/api/auth/login', {
      body: { email: user.email, password: user.password },
    });
    const cookie = login.cookies.find((c) => c.startsWith('plana_refresh='))!;
    const refreshToken = decodeURIComponent(cookie.split(';')[0]!.slice('plana_refresh='.length));
    const res = await viaAuth('POST', '/api/v1/auth/refresh', { refreshToken });
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(user.id);
    // the cookie was rotated through the auth service: the browser's copy is spent now
    expect((await call(api.base, 'POST', '/api/auth/refresh', { cookie: cookie.split(';')[0]! })).status).toBe(401);
  });

  it('refuses an unknown refresh token with 401', async () => {
    expect((await viaAuth('POST', '/api/v1/auth/refresh', { refreshToken: 'not-a-token' })).status).toBe(401);
  });
});

describe('GET /api/v1/status and GET /swagger', () => {
  it('reports the service, its dependencies and the token lifetimes', async () => {
    const res = await viaAuth('GET', '/api/v1/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      service: 'auth',
      status: 'ok',
      postgresql: 'ok',
      redis: 'ok',
      accessTokenTtlSeconds: api.cfg.ACCESS_TOKEN_TTL_SECONDS,
    });
  });

  it('serves the Swagger UI and the OpenAPI document of the four routes without a key', async () => {
    const page = await fetch(`${authUrl}/swagger`, { redirect: 'follow' });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger');
    const doc = (await call(authUrl, 'GET', '/swagger/json')).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(['/api/v1/auth/login', '/api/v1/auth/refresh', '/api/v1/status']);
  });
});

describe('the service key', () => {
  it.each([
    ['no key', {}],
    ['a wrong key', { 'x-api-key': 'not-the-key' }],
    ['a key of another target (operator → account-api)', { 'x-api-key': testKeys.operator }],
  ])('%s → 401 on every /api/v1 route', async (_label, headers) => {
    const user = await someone();
    for (const [method, path, body] of [
      ['POST', '/api/v1/auth/login', { email: user.email, password: user.password }],
      ['POST', '/api/v1/auth/refresh', { refreshToken: 'x' }],
      ['GET', '/api/v1/status', undefined],
    ] as const) {
      const res = await viaAuth(method, path, body, headers as Record<string, string>);
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body).not.toHaveProperty('accessToken');
    }
  });
});
