/**
 * What the browser portal (web/) needs from the account API, over real HTTP: the built app at
 * /app/ with its Content-Security-Policy, CSRF protection of the cookie-authenticated auth
 * writes, the dashboards for a logged-in member, the execution log's filters, and generated
 * types that match the API's current OpenAPI document. (The app itself: test/e2e/portal.test.ts.)
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { tempDir } from '../support/env.js';
import { addUser, adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let api: TestApi;
let base: string;

beforeAll(async () => {
  api = await startTestApi();
  base = api.base;
});
afterAll(async () => api?.close());

const refreshCookieOf = (cookies: string[]) => cookies.find((c) => c.startsWith('plana_refresh='))!.split(';')[0]!;

describe('the portal at /app/', () => {
  it('answers the app with a strict Content-Security-Policy, and its own paths with the same page', async () => {
    for (const path of ['/app/', '/app/w/some-workspace/keys']) {
      const res = await fetch(new URL(path, base));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      const html = await res.text();
      expect(html).toMatch(/<script type="module" crossorigin src="\/app\/assets\/index-[\w-]+\.js">/);
    }
    const html = await (await fetch(new URL('/app/', base))).text();
    const script = /src="(\/app\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(new URL(script, base));
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(asset.headers.get('content-type')).toContain('javascript');
    // nothing outside web/dist is served, whatever the path
    for (const path of ['/app/assets/..%2f..%2f..%2fpackage.json', '/app/assets/%2e%2e/%2e%2e/package.json']) {
      const res = await fetch(new URL(path, base));
      expect(await res.text()).not.toContain('plana-control-plane');
    }
  });
});

describe('CSRF: the cookie-authenticated auth writes come from this site only', () => {
  it('refuses login, refresh and logout sent cross-site, and takes them from the same origin or a non-browser client', async () => {
    const { workspace } = await adminOfNewWorkspace(base, api.pool);
    const user = await addUser(api.pool, [{ workspaceId: workspace.id, role: 'member' }]);
    const body = { email: user.email, password: user.password };

    const crossLogin = await call(base, 'POST', '/api/auth/login', {
      body,
      headers: { origin: 'https://evil.example' },
    });
    expect(crossLogin.status).toBe(403);
    expect(crossLogin.body.detail).toMatch(/cross-site/i);
    expect(crossLogin.cookies).toEqual([]);
    expect(
      (await call(base, 'POST', '/api/auth/login', { body, headers: { 'sec-fetch-site': 'cross-site' } })).status,
    ).toBe(403);

    const login = await call(base, 'POST', '/api/auth/login', {
      body,
      headers: { origin: new URL(base).origin, 'sec-fetch-site': 'same-origin' },
    });
    expect(login.status).toBe(200);
    const cookie = refreshCookieOf(login.cookies);
    expect(login.cookies.join(';')).toMatch(/HttpOnly/i);
    expect(login.cookies.join(';')).toMatch(/SameSite=Strict/i);

    // a forged refresh or logout from another site neither rotates nor ends the session
    expect(
      (await call(base, 'POST', '/api/auth/refresh', { cookie, headers: { origin: 'https://evil.example' } })).status,
    ).toBe(403);
    expect(
      (await call(base, 'POST', '/api/auth/logout', { cookie, headers: { 'sec-fetch-site': 'same-site' } })).status,
    ).toBe(403);
    const refreshed = await call(base, 'POST', '/api/auth/refresh', { cookie });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.accessToken).toEqual(expect.any(String));
  });
});

describe('dashboards for a logged-in member (GET /api/portal/workspaces/:slug/dashboard/…)', () => {
  it('needs a login, refuses a non-member, and answers a problem for a workspace without an ERP', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, api.pool);
    const other = await adminOfNewWorkspace(base, api.pool);
    const path = `/api/portal/workspaces/${workspace.slug}/dashboard/kpis`;
    expect((await call(base, 'GET', path)).status).toBe(401);
    const key = await createKey(base, accessToken);
    expect((await call(base, 'GET', path, { token: key.token })).status).toBe(403);
    const stranger = await call(base, 'GET', path, { token: other.accessToken });
    expect(stranger.status).toBe(403);
    expect(stranger.body.detail).toContain(workspace.slug);
    const noErp = await call(base, 'GET', path, { token: accessToken });
    expect(noErp.status).toBe(404);
    expect(noErp.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('execution log filters', () => {
  it('filters by key prefix, route, status and time', async () => {
    const { accessToken } = await adminOfNewWorkspace(base, api.pool);
    const a = await createKey(base, accessToken, { name: 'a' });
    const b = await createKey(base, accessToken, { name: 'b' });
    const before = new Date().toISOString();
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: a.token })).status).toBe(200);
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: b.token })).status).toBe(200);
    expect((await call(base, 'GET', '/api/portal/odoo/nowhere-at-all/kpis', { token: b.token })).status).toBe(403);
    const log = async (q: string) => {
      const res = await call(base, 'GET', `/api/portal/execution-log?${q}`, { token: accessToken });
      expect(res.status).toBe(200);
      return res.body.items as { keyPrefix: string; route: string; status: number }[];
    };
    expect(await log('')).toHaveLength(3);
    expect((await log(`keyPrefix=${a.prefix}`)).map((r) => r.keyPrefix)).toEqual([a.prefix]);
    expect(await log(`keyPrefix=${b.prefix}&route=/kpis`)).toEqual([
      expect.objectContaining({ status: 403, route: '/api/portal/odoo/:slug/kpis' }),
    ]);
    expect((await log('status=200')).map((r) => r.status)).toEqual([200, 200]);
    expect(await log(`until=${encodeURIComponent(before)}`)).toEqual([]);
    expect(await log(`since=${encodeURIComponent(before)}`)).toHaveLength(3);
    expect((await call(base, 'GET', '/api/portal/execution-log?status=42', { token: accessToken })).status).toBe(400);
    // any valid RFC 3339 time is taken, even one PostgreSQL could not read as it is
    expect(
      await log(
        `since=${encodeURIComponent('0949-10-02T22:17:32-19:21')}&until=${encodeURIComponent('0000-01-01T00:00:00Z')}`,
      ),
    ).toEqual([]);
  });
});

describe("the portal's generated API types", () => {
  it('come from the current OpenAPI document (run `npm run web:api` after changing a route)', async () => {
    const out = join(tempDir('openapi'), 'openapi.json');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/openapi.ts', out], { cwd: process.cwd() });
    const committed = await readFile('web/openapi.json', 'utf8');
    expect(JSON.parse(await readFile(out, 'utf8'))).toEqual(JSON.parse(committed));
    const types = await readFile('web/src/api/schema.d.ts', 'utf8');
    for (const path of Object.keys(JSON.parse(committed).paths)) expect(types).toContain(`"${path}"`);
  });
});
