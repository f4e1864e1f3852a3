/**
 * The account API as a real process (`tsx api/server.ts`, logging at trace level): a full key
 * lifecycle — login, create, use, revoke, use again — and then its whole log output searched for
 * every secret that crossed the wire. Only key prefixes and workspace ids may appear.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { apiProcessEnv, startApiProcess } from '../support/api.js';
import { testConfig } from '../support/env.js';
import { addUser, addWorkspace, call } from '../support/workspace-api.js';

let cfg: Config;
let pool: Pool;
let api: Awaited<ReturnType<typeof startApiProcess>>;
let base: string;

beforeAll(async () => {
  cfg = await testConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  base = cfg.API_PUBLIC_URL;
  api = await startApiProcess(apiProcessEnv(cfg, { LOG_LEVEL: 'trace', EXECUTION_LOG_FLUSH_MS: '100' }), base);
});

afterAll(async () => {
  await api?.stop();
  await pool?.end();
});

describe('logs of a full key lifecycle', () => {
  it('hold no token, password, refresh token or hash; they hold the key prefix and workspace id', async () => {
    const workspace = await addWorkspace(pool);
    const admin = await addUser(pool, [{ workspaceId: workspace.id, role: 'admin' }]);

    const login = await call(base, 'POST', '/api/auth/login', {
      body: { email: admin.email, password: admin.password },
    });
    expect(login.status).toBe(200);
    const accessToken: string = login.body.accessToken;
    const refreshToken = login.cookies[0]!.split(';')[0]!.split('=')[1]!;
    const refreshed = await call(base, 'POST', '/api/auth/refresh', { cookie: `plana_refresh=${refreshToken}` });
    expect(refreshed.status).toBe(200);

    const created = await call(base, 'POST', '/api/portal/apikeys', {
      token: accessToken,
      body: { name: 'lifecycle' },
    });
    expect(created.status).toBe(201);
    const { token, prefix, id } = created.body;
    const { rows } = await pool.query('SELECT token_hash FROM workspace_api_keys WHERE id = $1', [id]);
    const hash: string = rows[0].token_hash;

    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token })).status).toBe(200);
    expect((await call(base, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token })).status).not.toBe(401);
    expect(
      (
        await call(base, 'GET', '/api/portal/apikeys/self', {
          token: `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
        })
      ).status,
    ).toBe(401);
    expect((await call(base, 'DELETE', `/api/portal/apikeys/${id}`, { token: accessToken })).status).toBe(204);
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token })).status).toBe(401);
    expect((await call(base, 'GET', '/api/portal/execution-log', { token: accessToken })).status).toBe(200);

    // let the process write its last lines, then read everything it logged
    await api.stop();
    const output = api.output();

    const lines = output.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(10);
    const secrets = {
      'the key token': token,
      'the secret part of the token': token.slice(prefix.length),
      'the bcrypt hash': hash,
      'the password': admin.password,
      'the access token': accessToken,
      'the access token signature': accessToken.split('.')[2],
      'the refresh token': refreshToken,
      'the rotated refresh token': refreshed.cookies[0]!.split(';')[0]!.split('=')[1]!,
    };
    for (const [what, secret] of Object.entries(secrets))
      expect(output.includes(secret), `${what} appears in the logs`).toBe(false);

    // one line per key call — the request's "request completed" line — with the execution log record
    const calls = lines
      .map((l) => JSON.parse(l) as Record<string, unknown> & { res?: { statusCode: number } })
      .filter((l) => l.msg === 'request completed' && l.keyPrefix);
    expect(calls.map((c) => `${c.method} ${c.route} ${c.res?.statusCode}`)).toEqual([
      'GET /api/portal/apikeys/self 200',
      expect.stringMatching(/^GET \/api\/portal\/odoo\/:slug\/kpis \d{3}$/),
    ]);
    for (const c of calls) {
      expect(c).toMatchObject({ keyPrefix: prefix, workspaceId: workspace.id });
      expect(typeof c.responseTime).toBe('number');
      expect(typeof c.reqId).toBe('string');
    }
  });
});
