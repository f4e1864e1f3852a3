/**
 * `npm run cli -- users add` as a real process against a real API: the user can log in with the
 * password given through PLANA_USER_PASSWORD and holds the role; refusals exit non-zero.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { addWorkspace, call } from '../support/workspace-api.js';
import { testKeys } from '../support/service-keys.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let cfg: Config;
let pool: Pool;
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
  ({ cfg, pool } = api);
});

afterAll(() => api?.close());

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      `${root}node_modules/.bin/tsx`,
      [`${root}cli/index.ts`, ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, PLANA_API_URL: cfg.API_PUBLIC_URL, OPS_API_KEY: testKeys.operator, ...env },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('cli users add', () => {
  it('adds an admin who can then log in and manage keys', async () => {
    const ws = await addWorkspace(pool);
    const email = `cli-${ws.slug}@example.test`;
    const password = 'a-long-enough-password';
    const out = await cli(['users', 'add', '--workspace', ws.slug, '--email', email, '--role', 'admin'], {
      PLANA_USER_PASSWORD: password,
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`Created user ${email}`);
    expect(out.stdout).not.toContain(password);

    const login = await call(cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', { body: { email, password } });
    expect(login.status).toBe(200);
    const me = await call(cfg.API_PUBLIC_URL, 'GET', '/api/auth/me', { token: login.body.accessToken });
    expect(me.body.workspaces).toEqual([expect.objectContaining({ slug: ws.slug, role: 'admin' })]);
    const key = await call(cfg.API_PUBLIC_URL, 'POST', '/api/portal/apikeys', {
      token: login.body.accessToken,
      body: { name: 'k' },
    });
    expect(key.status).toBe(201);
  });

  it('adds an existing user to a second workspace, keeping the password', async () => {
    const a = await addWorkspace(pool);
    const b = await addWorkspace(pool);
    const email = `cli-${a.slug}@example.test`;
    const password = 'a-long-enough-password';
    await cli(['users', 'add', '--workspace', a.slug, '--email', email, '--role', 'admin'], {
      PLANA_USER_PASSWORD: password,
    });
    const second = await cli([
      'users',
      'add',
      '--workspace',
      b.slug,
      '--email',
      email,
      '--role',
      'member',
      '--no-password',
    ]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`Updated user ${email}`);
    const login = await call(cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', { body: { email, password } });
    const me = await call(cfg.API_PUBLIC_URL, 'GET', '/api/auth/me', { token: login.body.accessToken });
    expect(me.body.workspaces.map((w: { slug: string; role: string }) => `${w.slug}:${w.role}`).sort()).toEqual(
      [`${a.slug}:admin`, `${b.slug}:member`].sort(),
    );
  });

  it.each([
    [
      'an unknown workspace',
      ['--workspace', 'no-such-ws', '--role', 'admin'],
      { PLANA_USER_PASSWORD: 'a-long-enough-password' },
      4,
      'does not exist',
    ],
    [
      'a role that does not exist',
      ['--workspace', 'demo', '--role', 'owner'],
      { PLANA_USER_PASSWORD: 'a-long-enough-password' },
      1,
      'role',
    ],
    ['a short password', ['--workspace', 'demo', '--role', 'admin'], { PLANA_USER_PASSWORD: 'short' }, 1, 'password'],
    ['no password and no terminal', ['--workspace', 'demo', '--role', 'admin'], {}, 1, 'PLANA_USER_PASSWORD'],
  ])('refuses %s and adds no one', async (_label, args, env, code, message) => {
    const email = `refused-${Math.random().toString(36).slice(2, 8)}@example.test`;
    const out = await cli(['users', 'add', '--email', email, ...args], env);
    expect(out.code).toBe(code);
    expect(out.stderr).toContain(message);
    expect((await pool.query('SELECT 1 FROM users WHERE email = $1', [email])).rowCount).toBe(0);
  });
});
