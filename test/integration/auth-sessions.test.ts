/**
 * Interactive login over real HTTP on the real PostgreSQL: login, me, refresh rotation, reuse
 * detection (the whole family is revoked), logout, and the refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { addUser, addWorkspace, call } from '../support/workspace-api.js';

let cfg: Config;
let pool: Pool;
let api: TestApi;
let base: string;

beforeAll(async () => {
  api = await startTestApi();
  ({ cfg, pool, base } = api);
});

afterAll(() => api?.close());

const refreshCookie = (cookies: string[]) => cookies.find((c) => c.startsWith('plana_refresh='));
const cookiePair = (setCookie: string) => setCookie.split(';')[0]!;

async function userInTwoWorkspaces() {
  const a = await addWorkspace(pool);
  const b = await addWorkspace(pool);
  const user = await addUser(pool, [
    { workspaceId: a.id, role: 'admin' },
    { workspaceId: b.id, role: 'member' },
  ]);
  return { a, b, user };
}

describe('POST /api/auth/login', () => {
  it('returns a short-lived access token, the user, and a rotating refresh token in an httpOnly cookie', async () => {
    const { user } = await userInTwoWorkspaces();
    const res = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      tokenType: 'Bearer',
      expiresIn: cfg.ACCESS_TOKEN_TTL_SECONDS,
      user: { id: user.id, email: user.email },
    });
    expect(res.body.accessToken.split('.')).toHaveLength(3);
    expect(res.body).not.toHaveProperty('refreshToken');
    const cookie = refreshCookie(res.cookies)!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\/api\/auth/);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('accepts the e-mail in any letter case', async () => {
    const { user } = await userInTwoWorkspaces();
    const res = await call(base, 'POST', '/api/auth/login', {
      body: { email: user.email.toUpperCase(), password: user.password },
    });
    expect(res.status).toBe(200);
  });

  it('answers a wrong password and an unknown e-mail with the same 401, saying neither which', async () => {
    const { user } = await userInTwoWorkspaces();
    const wrongPassword = await call(base, 'POST', '/api/auth/login', {
      body: { email: user.email, password: 'wrong-password' },
    });
    const unknownEmail = await call(base, 'POST', '/api/auth/login', {
      body: { email: 'nobody@example.test', password: user.password },
    });
    for (const res of [wrongPassword, unknownEmail]) {
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.cookies).toHaveLength(0);
    }
    const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
    expect(strip(wrongPassword.body)).toEqual(strip(unknownEmail.body));
    expect(wrongPassword.body.detail).toBe('The e-mail address or password is not correct.');
  });

  it('throttles password guessing: after 10 failures, 429 with Retry-After even for the right password', async () => {
    const { user } = await userInTwoWorkspaces();
    for (let i = 0; i < 10; i++) {
      expect(
        (await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: `guess-${i}` } })).status,
      ).toBe(401);
    }
    const blocked = await call(base, 'POST', '/api/auth/login', {
      body: { email: user.email, password: user.password },
    });
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe('RATE_LIMITED');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.cookies).toHaveLength(0);
  });

  it('forgets earlier failures after a successful login', async () => {
    const { user } = await userInTwoWorkspaces();
    for (let i = 0; i < 9; i++)
      await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: 'wrong' } });
    expect(
      (await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } })).status,
    ).toBe(200);
    for (let i = 0; i < 9; i++)
      await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: 'wrong' } });
    expect(
      (await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } })).status,
    ).toBe(200);
  });

  it.each([
    ['no body', undefined],
    ['no password', { email: 'a@b.test' }],
    ['an extra field', { email: 'a@b.test', password: 'x', admin: true }],
    ['a number as e-mail', { email: 42, password: 'x' }],
  ])('answers 400 with a problem body for %s', async (_label, body) => {
    const res = await call(
      base,
      'POST',
      '/api/auth/login',
      body === undefined ? { headers: { 'content-type': 'application/json' } } : { body },
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });
});

describe('GET /api/auth/me', () => {
  it('shows the user, the workspaces and the role in each', async () => {
    const { a, b, user } = await userInTwoWorkspaces();
    const login = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    const res = await call(base, 'GET', '/api/auth/me', { token: login.body.accessToken });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual({ id: user.id, email: user.email, name: 'Test User' });
    expect(res.body.workspaces).toEqual(
      expect.arrayContaining([
        { id: a.id, slug: a.slug, name: `Workspace ${a.slug}`, role: 'admin' },
        { id: b.id, slug: b.slug, name: `Workspace ${b.slug}`, role: 'member' },
      ]),
    );
    expect(res.body.workspaces).toHaveLength(2);
  });

  it.each([
    ['no token', undefined, 401],
    ['a malformed token', 'not-a-jwt', 401],
    ['a token signed with another secret', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl', 401],
    ['a workspace API key', `ws_live_${'A'.repeat(52)}`, 403],
  ])('refuses %s', async (_label, token, status) => {
    const res = await call(base, 'GET', '/api/auth/me', { token });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('POST /api/auth/refresh', () => {
  it('rotates: a new access token and a new refresh cookie; the old cookie is spent', async () => {
    const { user } = await userInTwoWorkspaces();
    const login = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    const first = cookiePair(refreshCookie(login.cookies)!);

    const refreshed = await call(base, 'POST', '/api/auth/refresh', { cookie: first });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.user.id).toBe(user.id);
    const second = cookiePair(refreshCookie(refreshed.cookies)!);
    expect(second).not.toBe(first);
    expect((await call(base, 'GET', '/api/auth/me', { token: refreshed.body.accessToken })).status).toBe(200);

    // the rotated-to cookie works once more
    const again = await call(base, 'POST', '/api/auth/refresh', { cookie: second });
    expect(again.status).toBe(200);
  });

  it('revokes the whole family when a rotated refresh token is presented again', async () => {
    const { user } = await userInTwoWorkspaces();
    const login = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    const stolen = cookiePair(refreshCookie(login.cookies)!);
    const legit = await call(base, 'POST', '/api/auth/refresh', { cookie: stolen });
    const current = cookiePair(refreshCookie(legit.cookies)!);

    const replay = await call(base, 'POST', '/api/auth/refresh', { cookie: stolen });
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe('UNAUTHORIZED');

    // the family is gone: the legitimate holder's newest cookie no longer works either
    const afterReplay = await call(base, 'POST', '/api/auth/refresh', { cookie: current });
    expect(afterReplay.status).toBe(401);
    const { rows } = await pool.query(
      'SELECT count(*)::int AS live FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL',
      [user.id],
    );
    expect(rows[0].live).toBe(0);
  });

  it.each([
    ['no cookie', undefined],
    ['an unknown token', 'plana_refresh=not-a-token-we-issued'],
  ])('answers 401 to %s', async (_label, cookie) => {
    const res = await call(base, 'POST', '/api/auth/refresh', { cookie });
    expect(res.status).toBe(401);
  });

  it('stores only a hash of the refresh token', async () => {
    const { user } = await userInTwoWorkspaces();
    const login = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    const token = cookiePair(refreshCookie(login.cookies)!).split('=')[1]!;
    const { rows } = await pool.query('SELECT token_hash FROM refresh_tokens WHERE user_id = $1', [user.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].token_hash).not.toContain(token);
  });
});

describe('POST /api/auth/logout', () => {
  it('revokes the refresh token and clears the cookie', async () => {
    const { user } = await userInTwoWorkspaces();
    const login = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    const cookie = cookiePair(refreshCookie(login.cookies)!);
    const out = await call(base, 'POST', '/api/auth/logout', { cookie });
    expect(out.status).toBe(204);
    expect(refreshCookie(out.cookies)).toMatch(/plana_refresh=;/);
    expect((await call(base, 'POST', '/api/auth/refresh', { cookie })).status).toBe(401);
  });
});
