/** What the Workspace API tests share: real HTTP calls, workspaces, users, logins and keys. */
import { randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { Pool } from '../../lib/db.js';

export interface HttpResult {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever JSON each route answers
  body: any;
  cookies: string[];
}

/** A real HTTP request to a listening API; JSON in, JSON (or problem JSON) out. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; cookie?: string } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.cookie) headers.cookie = opts.cookie;
  const res = await fetch(new URL(path, base), {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? JSON.parse(text) : undefined,
    cookies: res.headers.getSetCookie(),
  };
}

export const uniqueSlug = (p = 'ws') => `${p}-${randomUUID().slice(0, 8)}`;

export async function addWorkspace(pool: Pool, slug = uniqueSlug()): Promise<{ id: string; slug: string }> {
  const { rows } = await pool.query<{ id: string }>(
    'INSERT INTO workspaces (slug, name) VALUES ($1, $2) RETURNING id',
    [slug, `Workspace ${slug}`],
  );
  return { id: rows[0]!.id, slug };
}

export async function addUser(
  pool: Pool,
  memberships: { workspaceId: string; role: 'admin' | 'member' }[],
  password = `pw-${randomUUID()}`,
): Promise<{ id: string; email: string; password: string }> {
  const email = `user-${randomUUID().slice(0, 8)}@example.test`;
  const { rows } = await pool.query<{ id: string }>(
    'INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3) RETURNING id',
    [email, 'Test User', await bcrypt.hash(password, 4)],
  );
  for (const m of memberships) {
    await pool.query('INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, $3)', [
      rows[0]!.id,
      m.workspaceId,
      m.role,
    ]);
  }
  return { id: rows[0]!.id, email, password };
}

export async function login(base: string, user: { email: string; password: string }): Promise<string> {
  const res = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.accessToken as string;
}

/** A workspace with an admin logged in: what most key tests start from. */
export async function adminOfNewWorkspace(base: string, pool: Pool) {
  const workspace = await addWorkspace(pool);
  const admin = await addUser(pool, [{ workspaceId: workspace.id, role: 'admin' }]);
  const accessToken = await login(base, admin);
  return { workspace, admin, accessToken };
}

export async function createKey(
  base: string,
  accessToken: string,
  body: { name: string; scopes?: string[] } = { name: 'test key' },
) {
  const res = await call(base, 'POST', '/api/portal/apikeys', { token: accessToken, body });
  if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; token: string; prefix: string; scopes: string[] };
}
