/**
 * The internal services (notifications, events, auth) share the account API's error mapper (lib/http.ts): the same classes of
 * careless and hostile requests get the same RFC 9457 problems there, over real HTTP. The mailer is
 * a recording double (what is outside the platform); Redis is the run's real one.
 */
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { buildEventsApp } from '../../../services/events/app.js';
import { buildNotificationsApp } from '../../../services/notifications/app.js';
import { buildAuthApp } from '../../../services/auth/app.js';
import { parseConfig } from '../../../lib/config.js';
import { buildBankingApp } from '../../../services/banking/app.js';
import { adaptersFromConfig } from '../../../domain/banking/nextgenpsd2.js';
import { createPool, type Pool } from '../../../lib/db.js';
import { buildAgentsApp } from '../../../services/agents/app.js';
import { WorkspaceGrants } from '../../../domain/agents/workspace-grant.js';
import { AcceptedKeyTable } from '../../../domain/service-keys/verifier.js';
import { hashServiceKey } from '../../../domain/service-keys/service-key-auth.js';

const KEY = 'hostile-test-key-000000000000000000000000';
// what a target's verifier holds, without the registry: these tests are about the problems, not the key check
const serviceKeys = new AcceptedKeyTable();
serviceKeys.replace([{ keyId: 'sk_00000000', caller: 'hostile-test', state: 'current', hash: hashServiceKey(KEY) }]);
// the agents service takes the account API's key only
const agentsKeys = new AcceptedKeyTable();
agentsKeys.replace([{ keyId: 'sk_00000001', caller: 'account-api', state: 'current', hash: hashServiceKey(KEY) }]);
let redis: Redis;
let pool: Pool;
const servers: { name: string; app: FastifyInstance; base: string; port: number; post: string }[] = [];
const sent: unknown[] = [];

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 2 });
  const notifications = await buildNotificationsApp({
    mailer: { send: async (m: unknown) => (sent.push(m), { messageId: `<${sent.length}@test>` }) } as never,
    redis,
    serviceKeys,
    appUrl: 'http://127.0.0.1',
    logLevel: 'silent',
  });
  const events = await buildEventsApp({
    redis,
    serviceKeys,
    stream: `hostile-${process.pid}`,
    maxLen: 100,
    dedupeTtlSeconds: 60,
    logLevel: 'silent',
  });
  pool = createPool(inject('databaseUrl'), 2);
  const auth = await buildAuthApp({ pool, redis, serviceKeys, config: { ...parseConfig({}), LOG_LEVEL: 'silent' } });
  const banking = await buildBankingApp({
    pool,
    secretsKey: Buffer.alloc(32, 1).toString('base64'),
    // never reached: every request here is refused before a bank is asked
    adapters: adaptersFromConfig('sandbox=http://127.0.0.1:9', 1_000),
    serviceKeys,
    callers: ['hostile-test'],
    logLevel: 'silent',
  });
  // nothing here reaches the database, the model or the data service: every request is refused before
  const agents = await buildAgentsApp({
    pool: { query: async () => ({ rows: [] }) } as never,
    serviceKeys: agentsKeys,
    grants: new WorkspaceGrants(Buffer.alloc(32, 1).toString('base64')),
    model: { client: undefined as never, model: 'none' },
    data: { call: async () => ({ ok: false, status: 503, error: 'none' }) },
    maxToolRounds: 1,
    logLevel: 'silent',
  });
  for (const [name, app, post] of [
    ['notifications', notifications, '/v1/email'],
    ['events', events, '/api/v1/events'],
    ['auth', auth, '/api/v1/auth/login'],
    ['banking', banking, '/banking/sandbox/consent'],
    ['agents', agents, '/agents/finance/chat'],
  ] as const) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as net.AddressInfo).port;
    servers.push({ name, app, base: `http://127.0.0.1:${port}`, port, post });
  }
});

afterAll(async () => {
  for (const s of servers) await s.app.close();
  await redis?.quit();
  await pool?.end();
});

function raw(port: number, request: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c) => (text += c));
    socket.on('error', (err) => (text ? undefined : reject(err)));
    socket.on('close', () => resolve({ status: Number(text.split(' ')[1]), text }));
    socket.write(request);
    setTimeout(() => socket.end(), 2_000).unref();
  });
}

async function expectProblem(res: Response, status: number) {
  const body = await res.json();
  expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
    status,
    type: expect.stringMatching(/^application\/problem\+json/),
  });
  expect(body).toMatchObject({
    type: expect.any(String),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code: expect.any(String),
    requestId: expect.any(String),
  });
  return body;
}

describe.each(['notifications', 'events', 'auth', 'banking', 'agents'])('the %s service', (name) => {
  const s = () => servers.find((x) => x.name === name)!;
  const post = (body: string, type = 'application/json') =>
    fetch(new URL(s().post, s().base), {
      method: 'POST',
      body,
      headers: { 'content-type': type, 'x-api-key': KEY, 'x-workspace-id': '00000000-0000-4000-8000-000000000000' },
    });

  it('NUL and lone surrogates in a body: 400 before anything is sent or stored', async () => {
    for (const bad of ['a\u0000b', 'a\uD800b']) {
      const res = await post(
        JSON.stringify({
          to: `x${bad}@example.test`,
          subject: bad,
          text: bad,
          specversion: '1.0',
          id: bad,
          source: bad,
          type: bad,
        }),
      );
      await expectProblem(res, 400);
    }
    expect(sent).toEqual([]);
  });

  it('broken JSON, an empty JSON body, a body over the limit, a wrong content type: 400, 400, 413, 415', async () => {
    await expectProblem(await post('{"to": '), 400);
    await expectProblem(await post(''), 400);
    await expectProblem(await post(JSON.stringify({ text: 'x'.repeat(300 * 1024) })), 413);
    await expectProblem(await post('hello', 'text/plain'), 415);
  });

  it('an unsupported method: 405 with Allow; an unknown path: 404', async () => {
    const res = await fetch(new URL(s().post, s().base), { method: 'PUT', headers: { 'x-api-key': KEY } });
    await expectProblem(res, 405);
    expect(res.headers.get('allow')).toBe('POST');
    await expectProblem(await fetch(new URL('/nowhere', s().base)), 404);
  });

  it('malformed requests and oversized headers on the raw socket: problems too', async () => {
    const bad = await raw(s().port, 'GARBAGE\r\n\r\n');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/content-type: application\/problem\+json/i);
    const big = await raw(s().port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big.status).toBe(431);
    expect(big.text).toContain('"code":"HEADERS_TOO_LARGE"');
  });
});
