/**
 * Credentials in a query string: the account API refuses them with a 400 problem that says where a
 * credential goes, and no service writes one to its log (the request line's URL is redacted), on
 * the account API, an internal service and the tenant ingress. The OAuth redirect (the OIDC
 * callback's `code` and `state`) is the one query that carries such values, and is not refused.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startApi } from '../../api/server.js';
import { createPool, type Pool } from '../../lib/db.js';
import { buildEventsApp } from '../../services/events/app.js';
import { buildTenantIngress } from '../../services/tenant-ingress/app.js';
import { AcceptedKeyTable } from '../../domain/service-keys/verifier.js';
import { testConfig } from '../support/env.js';
import { logCapture } from '../support/log-capture.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg';

describe('the account API', () => {
  const log = logCapture();
  let api: Awaited<ReturnType<typeof startApi>>;
  let pool: Pool;
  let base: string;
  let admin: Awaited<ReturnType<typeof adminOfNewWorkspace>>;
  let key: { token: string; prefix: string };

  beforeAll(async () => {
    const cfg = await testConfig({ LOG_LEVEL: 'debug' });
    api = await startApi(cfg, { logStream: log.stream });
    pool = createPool(cfg.DATABASE_URL, 2);
    base = cfg.API_PUBLIC_URL;
    admin = await adminOfNewWorkspace(base, pool);
    key = await createKey(base, admin.accessToken, { name: 'query' });
  });

  afterAll(async () => {
    await api?.close();
    await pool?.end();
  });

  it('GET /api/portal/apikeys/self?api_key=ws_live_…: 400 saying to use the Authorization header; the token is in no log line', async () => {
    const res = await call(base, 'GET', `/api/portal/apikeys/self?api_key=${key.token}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.detail).toContain('"api_key"');
    expect(res.body.detail).toContain('Authorization: Bearer');
    expect(res.body.errors).toEqual([
      { field: 'query.api_key', message: expect.stringContaining('Authorization: Bearer') },
    ]);
    expect(JSON.stringify(res.body)).not.toContain(key.token);
    const lines = log.of(res.body.requestId);
    expect(lines.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
    expect(log.text()).toContain('api_key=[redacted]');
    expect(log.text()).not.toContain(key.token.slice(16));
  });

  it('refuses a credential by its name or by its shape, with or without a key in the header', async () => {
    for (const query of [
      `access_token=${admin.accessToken}`,
      'password=hunter2',
      `token=abc`,
      `q=${key.token}`,
      `x=${JWT}`,
      'secret=whsec_abcdefgh',
    ]) {
      const res = await call(base, 'GET', `/api/portal/apikeys/self?${query}`, { token: key.token });
      expect(res.status, query).toBe(400);
      expect(res.body.detail, query).toMatch(/^The query parameter "[a-z_]+" is a credential/);
    }
    expect(log.text()).not.toContain(admin.accessToken);
    expect(log.text()).not.toContain('hunter2');
  });

  it('lets ordinary query parameters through: a key prefix, a cursor, a workspace slug', async () => {
    const prefix = await call(
      base,
      'GET',
      `/api/portal/execution-log?workspace=${admin.workspace.slug}&keyPrefix=${key.prefix}`,
      { token: admin.accessToken },
    );
    expect(prefix.status).toBe(200);
    const page = await call(base, 'GET', `/api/portal/apikeys?workspace=${admin.workspace.slug}`, {
      token: admin.accessToken,
    });
    expect(page.status).toBe(200);
  });

  it("the OIDC callback's code and state are the provider's, not refused (and never logged)", async () => {
    const res = await call(base, 'GET', `/api/auth/oidc/callback?code=${JWT}&state=s-123`);
    // OIDC is not configured here: the route itself answers
    expect(res.status).toBe(404);
    expect(res.body.detail).toContain('OIDC login is not configured');
    expect(log.text()).toContain('code=[redacted]&state=[redacted]');
    expect(log.text()).not.toContain(JWT);
  });
});

describe('the internal services and the tenant ingress', () => {
  it('events: a token in the query is redacted on the request line', async () => {
    const log = logCapture();
    const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 2 });
    let app: FastifyInstance | undefined;
    try {
      app = await buildEventsApp({
        redis,
        serviceKeys: new AcceptedKeyTable(),
        stream: `qc-${process.pid}`,
        maxLen: 10,
        dedupeTtlSeconds: 60,
        logLevel: 'info',
        logStream: log.stream,
      });
      const res = await app.inject({
        method: 'GET',
        url: `/api/v1/events/info?api_key=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef&since=1`,
      });
      expect(res.statusCode).toBe(401);
      expect(log.text()).toContain('/api/v1/events/info?api_key=[redacted]&since=1');
      expect(log.text()).not.toContain('0123456789abcdef');
    } finally {
      await app?.close();
      redis.disconnect();
    }
  });

  it("tenant ingress: an ERP's password-reset token in the query is redacted on the request line", async () => {
    const log = logCapture();
    const platform = { query: async () => ({ rows: [] }) };
    const app = await buildTenantIngress({
      platform: platform as never,
      upstream: 'http://127.0.0.1:9',
      saas: {} as never,
      sessionKey: randomBytes(32).toString('base64'),
      logLevel: 'info',
      logStream: log.stream,
    });
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/web/reset_password?db=acme&token=Zx8fQ2rT9kLmN3pV',
        headers: { host: 'nobody.erp.example.test' },
      });
      expect(res.statusCode).toBe(404);
      expect(log.text()).toContain('/web/reset_password?db=acme&token=[redacted]');
      expect(log.text()).not.toContain('Zx8fQ2rT9kLmN3pV');
    } finally {
      await app.close();
    }
  });
});
