/** The account API's probes, its OpenAPI document and its error bodies, on the real servers. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { startApi } from '../../../api/server.js';
import { buildApp } from '../../../api/app.js';
import { createPool } from '../../../lib/db.js';
import { connectTemporal } from '../../../lib/temporal.js';
import { freePort } from '../../../scripts/local-servers.js';
import { testConfig } from '../../support/env.js';
import { testKeys } from '../../support/service-keys.js';

let api: Awaited<ReturnType<typeof startApi>>;

beforeAll(async () => {
  api = await startApi(await testConfig());
});
afterAll(async () => api?.close());

describe('probes', () => {
  it('/healthz answers ok', async () => {
    const res = await api.app.inject('/healthz');
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz answers 200 when PostgreSQL, Redis and Temporal answer', async () => {
    const res = await api.app.inject('/readyz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { postgresql: 'ok', redis: 'ok', temporal: 'ok' } });
  });

  it('/readyz answers 503 naming the part that is down', async () => {
    const cfg = await testConfig();
    const deadRedis = new Redis(`redis://127.0.0.1:${await freePort()}`, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    deadRedis.on('error', () => {}); // the failure is what this test is about
    const pool = createPool(cfg.DATABASE_URL, 1);
    const temporal = await connectTemporal(cfg);
    let app: FastifyInstance | undefined;
    try {
      app = await buildApp({ config: cfg, pool, redis: deadRedis, temporal });
      const res = await app.inject('/readyz');
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toMatchObject({
        status: 503,
        code: 'UNAVAILABLE',
        failing: ['redis'],
        detail: 'Not ready: redis not reachable.',
      });
    } finally {
      await app?.close();
      deadRedis.disconnect();
      await pool.end();
      await temporal.connection.close();
    }
  });
});

describe('OpenAPI', () => {
  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await api.app.inject('/docs/json');
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    const welcome = doc.paths['/api/ops/tenants/{name}/welcome'].post;
    expect(welcome.security).toEqual([{ opsKey: [] }]);
    expect(Object.keys(welcome.responses)).toEqual(expect.arrayContaining(['202', '401', '404']));
  });

  it('serves the docs page', async () => {
    const res = await api.app.inject('/docs/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
  });
});

describe('errors', () => {
  it('an unknown route is a 404 problem with the request id', async () => {
    const given = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await api.app.inject({ url: '/nope', headers: { 'x-request-id': given } });
    expect(res.statusCode).toBe(404);
    expect(res.headers['x-request-id']).toBe(given);
    expect(res.json()).toMatchObject({
      type: expect.stringContaining('not-found'),
      title: 'Not found',
      status: 404,
      code: 'NOT_FOUND',
      requestId: given,
      detail: 'No route GET /nope',
    });
  });

  it("a request id is a trace id: a traceparent's, else a new one for an X-Request-Id of another shape", async () => {
    const traced = await api.app.inject({
      url: '/nope',
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    expect(traced.json().requestId).toBe('0af7651916cd43dd8448eb211c80319c');
    const other = await api.app.inject({ url: '/nope', headers: { 'x-request-id': 'req-123' } });
    expect(other.json().requestId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('a malformed path parameter is a 400 problem naming it', async () => {
    const res = await api.app.inject({
      method: 'POST',
      url: '/api/ops/tenants/Not_Valid/welcome',
      headers: { 'x-api-key': testKeys.operator },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toContain('params.name');
  });
});
