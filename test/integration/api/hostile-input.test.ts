/**
 * Careless and hostile input against the account API as a real process (`tsx api/server.ts`,
 * debug logging), over real HTTP and raw sockets: every class of bad request gets a 4xx RFC 9457
 * problem (`application/problem+json` with type, title, status, detail, code, requestId), never a
 * 5xx or Fastify's own JSON; a dependency outage gets a 503 naming the part. PostgreSQL and Redis
 * are reached through TCP proxies the test can cut. At the end the process's whole log output is
 * searched for stack traces (only the outages' lines have one) and for the personal data the
 * requests carried.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../lib/config.js';
import { createPool, type Pool } from '../../../lib/db.js';
import { apiProcessEnv, startApiProcess } from '../../support/api.js';
import { testConfig } from '../../support/env.js';
import { addUser, addWorkspace, call, createKey, login } from '../../support/workspace-api.js';
import { testKeys } from '../../support/service-keys.js';

let cfg: Config;
let pool: Pool;
let api: Awaited<ReturnType<typeof startApiProcess>>;
let base: string;
let port: number;
let pgProxy: Proxy;
let redisProxy: Proxy;
let admin: { email: string; password: string; accessToken: string; workspace: { id: string; slug: string } };
const PERSONAL_EMAIL = `ada.lovelace.${Date.now()}@hostile.test`;
/** Every answer seen, per class: the figures printed at the end. */
const seen: Record<string, { requests: number; fiveXx: number; notProblem: number }> = {};

// ---------------------------------------------------------------------------------------------
// helpers

interface Proxy {
  url: string;
  cut(): Promise<void>;
}

/** A TCP proxy to `target` (host:port) that the test can cut: connections reset, the port refuses. */
async function tcpProxy(target: URL): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever JSON the server answered
  body: any;
}

/** Sends `request` as bytes on a fresh socket; resolves the parsed answer. */
function raw(request: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (err) => (chunks.length ? undefined : reject(err)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of headerLines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      let bodyText = rest.join('\r\n\r\n');
      if (headers['transfer-encoding'] === 'chunked')
        bodyText = bodyText.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
      let body: unknown;
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text: bodyText, body });
    });
    socket.write(request);
    // a request with framing the server has to wait for (none here): do not hang the test
    setTimeout(() => socket.end(), 2_000).unref();
  });
}

/** One request over fetch with any body and headers. */
async function http(
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<RawAnswer> {
  const res = await fetch(new URL(path, base), { method, headers: opts.headers, body: opts.body });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers), text, body };
}

/** Counts the answer under `klass` and checks it is the problem expected. */
function expectProblem(klass: string, res: RawAnswer, status: number, label = '') {
  const figures = (seen[klass] ??= { requests: 0, fiveXx: 0, notProblem: 0 });
  figures.requests++;
  if (res.status >= 500) figures.fiveXx++;
  const isProblem =
    /^application\/problem\+json/.test(res.headers['content-type'] ?? '') &&
    res.body &&
    typeof res.body.type === 'string' &&
    typeof res.body.title === 'string' &&
    res.body.status === res.status &&
    typeof res.body.detail === 'string' &&
    typeof res.body.code === 'string' &&
    typeof res.body.requestId === 'string';
  if (!isProblem) figures.notProblem++;
  expect({ label, status: res.status, problem: isProblem, text: isProblem ? '' : res.text.slice(0, 300) }).toEqual({
    label,
    status,
    problem: true,
    text: '',
  });
  return res.body as { detail: string; code: string; errors?: { field: string; message: string }[] };
}

const auth = () => ({ authorization: `Bearer ${admin.accessToken}` });
const ops = () => ({ 'x-api-key': testKeys.operator });
const json = (v: unknown) => ({ body: JSON.stringify(v), headers: { 'content-type': 'application/json' } });

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  cfg = await testConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  base = cfg.API_PUBLIC_URL;
  port = cfg.API_PORT;
  pgProxy = await tcpProxy(new URL(cfg.DATABASE_URL));
  redisProxy = await tcpProxy(new URL(cfg.REDIS_URL));
  // the API reaches PostgreSQL and Redis through proxies the tests cut
  api = await startApiProcess(
    apiProcessEnv(cfg, { LOG_LEVEL: 'debug', DATABASE_URL: pgProxy.url, REDIS_URL: redisProxy.url }),
    base,
  );

  const workspace = await addWorkspace(pool);
  const user = await addUser(pool, [{ workspaceId: workspace.id, role: 'admin' }]);
  admin = { ...user, workspace, accessToken: await login(base, user) };
});

afterAll(async () => {
  console.log(
    'hostile input figures (requests / 5xx / non-problem errors per class):\n' +
      Object.entries(seen)
        .map(([k, v]) => `  ${k}: ${v.requests} / ${v.fiveXx} / ${v.notProblem}`)
        .join('\n'),
  );
  await api?.stop('SIGKILL');
  await pool?.end();
});

describe('text the platform does not accept: NUL and lone surrogates, anywhere, get 400 before any query', () => {
  const NUL = 'a\u0000b';
  const LONE = 'a\uD800b';
  it.each([NUL, LONE])('in JSON bodies (%j)', async (bad) => {
    const cases: [string, string, ReturnType<typeof json> & { headers: Record<string, string> }][] = [
      ['POST', '/api/auth/login', json({ email: `ada${bad}@acme.test`, password: 'whatever-password' })],
      ['POST', '/api/auth/login', json({ email: admin.email, password: bad })],
      ['POST', '/api/portal/apikeys', { ...json({ name: `key ${bad}` }), headers: { ...json({}).headers, ...auth() } }],
      [
        'POST',
        '/api/portal/apikeys',
        { ...json({ name: 'k', scopes: [bad] }), headers: { ...json({}).headers, ...auth() } },
      ],
      [
        'POST',
        '/api/ops/users',
        {
          ...json({ workspace: admin.workspace.slug, email: `u${bad}@acme.test`, role: 'member' }),
          headers: { ...json({}).headers, ...ops() },
        },
      ],
      [
        'POST',
        '/api/ops/users',
        {
          ...json({ workspace: admin.workspace.slug, email: 'u@acme.test', role: 'member', name: bad }),
          headers: { ...json({}).headers, ...ops() },
        },
      ],
      ['POST', '/api/ops/users', { ...json({ [`k${bad}`]: 1 }), headers: { ...json({}).headers, ...ops() } }],
    ];
    for (const [method, path, opts] of cases) {
      const problem = expectProblem(
        'NUL/surrogate in bodies',
        await http(method, path, opts),
        400,
        `${method} ${path} ${opts.body}`,
      );
      expect(problem.code).toBe('BAD_REQUEST');
    }
  });

  it('in query strings and path parameters, on every method', async () => {
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/api/portal/apikeys?workspace=%00', auth()],
      ['POST', '/api/portal/apikeys?workspace=%00', { ...auth(), 'content-type': 'application/json' }],
      ['DELETE', '/api/portal/apikeys/00000000-0000-4000-8000-000000000000?workspace=%00', auth()],
      ['GET', '/api/portal/execution-log?cursor=%00', auth()],
      ['GET', `/api/portal/apikeys?workspace=${encodeURIComponent(admin.workspace.slug)}%00`, auth()],
      ['GET', '/api/ops/tenant-clients/%00', ops()],
      ['GET', '/api/ops/tenant-clients/a%00b?view=summary', ops()],
      ['POST', '/api/ops/tenant-clients/%00/cancel', ops()],
      ['POST', '/api/ops/tenants/%00/welcome', ops()],
      ['GET', '/api/ops/workspaces/%00/rate-limits', ops()],
      ['DELETE', '/api/portal/apikeys/%00', auth()],
      ['GET', '/api/portal/apikeys?workspace=%ED%A0%80', auth()], // a UTF-8-encoded lone surrogate
    ];
    for (const [method, path, headers] of cases) {
      const body = method === 'POST' && headers['content-type'] ? JSON.stringify({ name: 'k' }) : undefined;
      expectProblem(
        'NUL/surrogate in query and params',
        await http(method, path, { headers, body }),
        400,
        `${method} ${path}`,
      );
    }
  });

  it('in headers (raw socket: fetch refuses to send them)', async () => {
    for (const header of [`X-Workspace: a\u0000b`, `Authorization: Bearer a\u0000b`, `X-API-Key: a\u0000b`]) {
      const res = await raw(`GET /api/portal/apikeys HTTP/1.1\r\nHost: x\r\n${header}\r\n\r\n`);
      expectProblem('NUL in headers', res, 400, header);
    }
  });

  it('nothing was written: no key, no user with such a name', async () => {
    const keys = await pool.query('SELECT 1 FROM workspace_api_keys WHERE workspace_id = $1', [admin.workspace.id]);
    expect(keys.rowCount).toBe(0);
    const users = await pool.query("SELECT 1 FROM users WHERE email = 'u@acme.test'");
    expect(users.rowCount).toBe(0);
  });
});

describe('malformed and oversized requests at the HTTP layer', () => {
  it('a malformed request line, framing or header: 400 problem from the raw socket', async () => {
    for (const request of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n',
      'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello',
      'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n',
    ]) {
      expectProblem('malformed HTTP', await raw(request), 400, JSON.stringify(request));
    }
  });

  it('headers over 16 KiB: 431; a request line over 16 KiB: 431', async () => {
    expectProblem(
      'oversized',
      await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      431,
    );
    expectProblem('oversized', await raw(`GET /healthz?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431);
  });

  it('a path parameter over 100 characters: 414; malformed percent-encoding: 400', async () => {
    expectProblem(
      'oversized',
      await http('GET', `/api/ops/tenant-clients/${'a'.repeat(150)}`, { headers: ops() }),
      414,
    );
    expectProblem('malformed HTTP', await http('GET', '/api/ops/tenant-clients/%E0%A4%A', { headers: ops() }), 400);
    expectProblem('malformed HTTP', await http('GET', '/api/ops/tenant-clients/%ED%A0%80', { headers: ops() }), 400);
  });

  it('a body over the limit: 413; a content type the route does not take: 415; broken JSON: 400 that does not echo it', async () => {
    const big = JSON.stringify({ email: 'a@b.test', password: 'x'.repeat(300 * 1024) });
    expectProblem(
      'oversized',
      await http('POST', '/api/auth/login', { body: big, headers: { 'content-type': 'application/json' } }),
      413,
    );
    const wrongType = await http('POST', '/api/auth/login', {
      body: 'email=a',
      headers: { 'content-type': 'text/plain' },
    });
    expectProblem('content type', wrongType, 415);
    const xml = await http('POST', '/api/ops/users', {
      body: '<user/>',
      headers: { 'content-type': 'application/xml', ...ops() },
    });
    expectProblem('content type', xml, 415);
    const broken = await http('POST', '/api/auth/login', {
      body: `{"email": "${PERSONAL_EMAIL}",`,
      headers: { 'content-type': 'application/json' },
    });
    const problem = expectProblem('malformed HTTP', broken, 400);
    expect(problem.detail).not.toContain(PERSONAL_EMAIL);
    const deep = `${'['.repeat(1000)}${']'.repeat(1000)}`;
    expectProblem(
      'oversized',
      await http('POST', '/api/ops/users', { body: deep, headers: { 'content-type': 'application/json', ...ops() } }),
      400,
    );
  });

  it('an unsupported method on an existing path: 405 with Allow; an unknown path: 404', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/api/auth/login', 'POST'],
      ['DELETE', '/healthz', 'GET, HEAD'],
      ['PATCH', '/api/ops/tenant-clients/acme', 'GET, HEAD'],
      // a TenantClient is created and deleted on the Kubernetes API, not here
      ['POST', '/api/ops/tenant-clients', 'GET, HEAD'],
      ['DELETE', '/api/ops/tenant-clients/acme', 'GET, HEAD'],
      ['POST', '/api/portal/apikeys/00000000-0000-4000-8000-000000000000', 'DELETE'],
      ['GET', '/api/ops/tenants/acme/welcome', 'POST'],
      // a parameter route (DELETE /apikeys/:id) does not swallow a more specific resource
      ['DELETE', '/api/portal/apikeys/self', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await http(method, path, { headers: ops() });
      expectProblem('405', res, 405, `${method} ${path}`);
      expect(res.headers.allow).toBe(allow);
    }
    expectProblem('405', await http('GET', '/api/no-such-thing'), 404);
  });
});

describe('TenantClient names', () => {
  it('names that are not DNS labels: 400 on every route that takes one', async () => {
    for (const name of ['-bad', 'bad-', '-', 'a_b', 'A']) {
      expectProblem(
        'invalid names',
        await http('GET', `/api/ops/tenant-clients/${name}`, { headers: ops() }),
        400,
        name,
      );
      expectProblem(
        'invalid names',
        await http('POST', `/api/ops/tenants/${name}/welcome`, { headers: ops() }),
        400,
        name,
      );
    }
    expect((await pool.query("SELECT 1 FROM tenant_status WHERE name IN ('-bad', 'bad-', '-')")).rowCount).toBe(0);
  });
});

describe('what a careless client sends', () => {
  it('a bodiless DELETE with Content-Type: application/json revokes the key (204), which then gets 401', async () => {
    const key = await createKey(base, admin.accessToken, { name: 'curl -H' });
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
    const res = await http('DELETE', `/api/portal/apikeys/${key.id}`, {
      headers: { ...auth(), 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
    const after = await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect(after.status).toBe(401);
  });

  it('POST /api/ops/users with an existing e-mail and a password: 409, the password stays', async () => {
    const add = (body: Record<string, unknown>) =>
      http('POST', '/api/ops/users', { ...json(body), headers: { 'content-type': 'application/json', ...ops() } });
    const first = await add({
      workspace: admin.workspace.slug,
      email: PERSONAL_EMAIL,
      role: 'member',
      password: 'the-first-password',
    });
    expect(first.status).toBe(201);
    const again = await add({
      workspace: admin.workspace.slug,
      email: PERSONAL_EMAIL.toUpperCase(),
      role: 'member',
      password: 'a-second-password',
    });
    expect(expectProblem('existing e-mail', again, 409).detail).toContain('already exists');
    expect(
      (await call(base, 'POST', '/api/auth/login', { body: { email: PERSONAL_EMAIL, password: 'the-first-password' } }))
        .status,
    ).toBe(200);
    expect(
      (await call(base, 'POST', '/api/auth/login', { body: { email: PERSONAL_EMAIL, password: 'a-second-password' } }))
        .status,
    ).toBe(401);
    const membership = await add({ workspace: admin.workspace.slug, email: PERSONAL_EMAIL, role: 'admin' });
    expect(membership.status).toBe(200);
    const reset = await add({
      workspace: admin.workspace.slug,
      email: PERSONAL_EMAIL,
      role: 'admin',
      password: 'a-second-password',
      resetPassword: true,
    });
    expect(reset.status).toBe(200);
    expect(
      (await call(base, 'POST', '/api/auth/login', { body: { email: PERSONAL_EMAIL, password: 'a-second-password' } }))
        .status,
    ).toBe(200);
  });

  it('logout ends the access token at once, with the cookie or with the token itself', async () => {
    const user = { email: PERSONAL_EMAIL, password: 'a-second-password' };
    const viaCookie = await call(base, 'POST', '/api/auth/login', { body: user });
    const cookie = viaCookie.cookies[0]!.split(';')[0]!;
    expect((await call(base, 'GET', '/api/auth/me', { token: viaCookie.body.accessToken })).status).toBe(200);
    expect((await call(base, 'POST', '/api/auth/logout', { cookie })).status).toBe(204);
    expect((await call(base, 'GET', '/api/auth/me', { token: viaCookie.body.accessToken })).status).toBe(401);

    const token = await login(base, user);
    expect((await call(base, 'POST', '/api/auth/logout', { token })).status).toBe(204);
    expect((await call(base, 'GET', '/api/auth/me', { token })).status).toBe(401);
  });
});

describe('a dependency outage: 503 naming the part', () => {
  it('PostgreSQL down: list and get answer 503 "PostgreSQL is unavailable"', async () => {
    await pgProxy.cut();
    for (const path of [
      '/api/ops/tenant-clients',
      '/api/ops/tenant-clients/acme',
      `/api/ops/workspaces/${admin.workspace.slug}/rate-limits`,
    ]) {
      const res = await http('GET', path, { headers: ops() });
      const problem = expectProblem('dependency down', res, 503, path);
      expect(problem.detail).toBe('PostgreSQL is unavailable; retry shortly.');
    }
  });

  it('Redis down: a login answers 503 "Redis is unavailable"', async () => {
    await redisProxy.cut();
    const res = await http('POST', '/api/auth/login', json({ email: PERSONAL_EMAIL, password: 'whatever-password' }));
    expect(expectProblem('dependency down', res, 503).detail).toBe('Redis is unavailable; retry shortly.');
  });
});

describe('the log output of all the above', () => {
  it('holds a stack only for the outages (5xx), none for a refusal, and none of the personal data the requests carried', async () => {
    await new Promise((r) => setTimeout(r, 200)); // the last lines reach the pipe
    const output = api.output();
    expect(output).toContain('request completed');
    const lines = output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { reqId?: string; statusCode?: number; msg: string });
    // a request's line has a stack only when the request failed (5xx: the PostgreSQL and Redis
    // outages above); the outages' background lines (connections, flushes) may have one too
    const requestsWithStack = lines.filter((l) => l.reqId && JSON.stringify(l).includes('"stack"'));
    expect(requestsWithStack.length).toBeGreaterThan(0);
    for (const l of requestsWithStack) expect(l.statusCode, l.msg).toBeGreaterThanOrEqual(500);
    expect(output).not.toMatch(/\n\s+at .+:\d+:\d+/);
    expect(output.toLowerCase()).not.toContain(PERSONAL_EMAIL.toLowerCase());
    expect(output).not.toContain(admin.email);
    expect(output).not.toContain('the-first-password');
  });
});
