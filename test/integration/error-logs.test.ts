/**
 * What the log says about a failure, on the account API and on every internal service (DESIGN §5):
 * an unexpected error (5xx) is one line with the error's name, message and stack and the request's
 * method, route pattern and request id, with credentials and e-mail addresses redacted; an expected
 * refusal (4xx) is the request's one line, without a stack. The servers are the real apps, logging
 * to a stream the test reads.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { buildApp } from '../../api/app.js';
import { connectTemporal } from '../../lib/temporal.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { DashboardService } from '../../domain/erp/dashboards.js';
import { buildEventsApp } from '../../services/events/app.js';
import { buildNotificationsApp } from '../../services/notifications/app.js';
import { buildAuthApp } from '../../services/auth/app.js';
import { buildBankingApp } from '../../services/banking/app.js';
import { buildAgentsApp } from '../../services/agents/app.js';
import { buildDataApp } from '../../services/data/app.js';
import { buildTenantIngress } from '../../services/tenant-ingress/app.js';
import { adaptersFromConfig } from '../../domain/banking/nextgenpsd2.js';
import { WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { AcceptedKeyTable } from '../../domain/service-keys/verifier.js';
import { parseConfig } from '../../lib/config.js';
import { testConfig } from '../support/env.js';
import { logCapture } from '../support/log-capture.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

/** What a driver's or database's message may quote: a person's address, a bearer token, a workspace key, a signing secret, a password. */
const EMAIL = 'jane.doe@example.com';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg';
// a made-up key of the real shape, assembled here so no token-shaped literal sits in the source
const WS_KEY = ['ws_live_', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 'ABCDEFGHIJKLMNOPQRSTUVWX'].join('');
const WHSEC = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LW9mLXRoZS1lbmRwb2ludA';
const failure = () =>
  new TypeError(
    `could not load the row of ${EMAIL}: Authorization: Bearer ${JWT}, key ${WS_KEY}, secret ${WHSEC}, password=hunter2-very-secret`,
  );
const SECRETS = [EMAIL, JWT, WS_KEY, WHSEC, 'hunter2-very-secret'];

function expectFailureLine(lines: Record<string, unknown>[], requestId: string, method: string, route: string) {
  const failed = lines.filter((l) => (l.reqId === requestId || l.requestId === requestId) && (l.level as number) >= 50);
  expect(failed).toHaveLength(1);
  const line = failed[0]!;
  expect(line).toMatchObject({ msg: 'request failed', method, route, requestId, statusCode: 500 });
  const err = line.err as Record<string, string>;
  expect(err.name).toBe('TypeError');
  expect(err.message).toContain('could not load the row of [email]');
  expect(err.stack).toMatch(/^TypeError: could not load the row of \[email\]/);
  expect(err.stack).toMatch(/\n\s+at .+:\d+:\d+/);
  const text = JSON.stringify(line);
  for (const secret of SECRETS) expect(text).not.toContain(secret);
  expect(err.message).toContain('Bearer [redacted]');
}

function expectRefusalLine(lines: Record<string, unknown>[], requestId: string, status: number) {
  const mine = lines.filter((l) => l.reqId === requestId || l.requestId === requestId);
  expect(mine, JSON.stringify(mine)).toHaveLength(1);
  expect(mine[0]).toMatchObject({ msg: 'request completed', res: { statusCode: status } });
  expect(JSON.stringify(mine[0])).not.toMatch(/stack|"err"/);
}

describe('the account API', () => {
  const log = logCapture();
  let app: FastifyInstance;
  let pool: Pool;
  let redis: Redis;
  let temporal: Awaited<ReturnType<typeof connectTemporal>>;
  let base: string;

  beforeAll(async () => {
    const cfg = await testConfig({ LOG_LEVEL: 'info' });
    pool = createPool(cfg.DATABASE_URL, 3);
    redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
    temporal = await connectTemporal(cfg);
    const failing: DashboardService = {
      kpis: async () => {
        throw failure();
      },
      cashflow: async () => {
        throw failure();
      },
      alerts: async () => {
        throw failure();
      },
    };
    app = await buildApp({ config: cfg, pool, redis, temporal, dashboardService: failing, logStream: log.stream });
    await app.listen({ host: '127.0.0.1', port: cfg.API_PORT });
    base = cfg.API_PUBLIC_URL;
  });

  afterAll(async () => {
    await app?.close();
    await temporal?.connection.close();
    redis?.disconnect();
    await pool?.end();
  });

  it('a 5xx: name, message, stack, method, route, request id; the e-mail and the tokens in its message redacted', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken, { name: 'dash', scopes: ['dashboard:read'] });
    const res = await call(base, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: key.token });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain(EMAIL);
    expectFailureLine(log.lines, res.body.requestId, 'GET', '/api/portal/odoo/:slug/kpis');
  });

  it('a 4xx: the one line of the request, without a stack', async () => {
    const res = await call(base, 'GET', '/api/portal/odoo/some-workspace/kpis');
    expect(res.status).toBe(401);
    expectRefusalLine(log.lines, res.body.requestId, 401);
  });
});

describe('the internal services', () => {
  const keys = new AcceptedKeyTable();
  let redis: Redis;
  let pool: Pool;
  const services: { name: string; app: FastifyInstance; log: ReturnType<typeof logCapture>; refused: string }[] = [];

  beforeAll(async () => {
    redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 2 });
    pool = createPool(inject('databaseUrl'), 2);
    const secretsKey = Buffer.alloc(32, 1).toString('base64');
    const build: [string, string, (logStream: ReturnType<typeof logCapture>['stream']) => Promise<FastifyInstance>][] =
      [
        [
          'events',
          'GET /api/v1/events/info',
          (logStream) =>
            buildEventsApp({
              redis,
              serviceKeys: keys,
              stream: `errlog-${process.pid}`,
              maxLen: 100,
              dedupeTtlSeconds: 60,
              logLevel: 'info',
              logStream,
            }),
        ],
        [
          'notifications',
          'POST /v1/email',
          (logStream) =>
            buildNotificationsApp({
              mailer: { send: async () => ({ messageId: '<x@test>' }) } as never,
              redis,
              serviceKeys: keys,
              appUrl: 'http://127.0.0.1',
              logLevel: 'info',
              logStream,
            }),
        ],
        [
          'auth',
          'GET /api/v1/status',
          (logStream) =>
            buildAuthApp({
              pool,
              redis,
              serviceKeys: keys,
              config: { ...parseConfig({}), LOG_LEVEL: 'info' },
              logStream,
            }),
        ],
        [
          'banking',
          'GET /banking/adapters',
          (logStream) =>
            buildBankingApp({
              pool,
              secretsKey,
              adapters: adaptersFromConfig('sandbox=http://127.0.0.1:9', 1_000),
              serviceKeys: keys,
              callers: ['x'],
              logLevel: 'info',
              logStream,
            }),
        ],
        [
          'agents',
          'GET /agents/finance/executions',
          (logStream) =>
            buildAgentsApp({
              pool,
              serviceKeys: keys,
              grants: new WorkspaceGrants(secretsKey),
              model: { client: undefined as never, model: 'none' },
              data: { call: async () => ({ ok: false, status: 503, error: 'none' }) },
              maxToolRounds: 1,
              logLevel: 'info',
              logStream,
            }),
        ],
        [
          'data',
          'GET /data/workspaces/00000000-0000-4000-8000-000000000000/kpis',
          (logStream) =>
            buildDataApp({
              pool,
              serviceKeys: keys,
              grants: new WorkspaceGrants(secretsKey),
              dashboards: {} as never,
              logLevel: 'info',
              logStream,
            }),
        ],
      ];
    for (const [name, refused, make] of build) {
      const log = logCapture();
      const app = await make(log.stream);
      // a route of the test's own that fails as a driver would, behind the service's own error handling
      app.get('/error-log-test/:id', async () => {
        throw failure();
      });
      await app.ready();
      services.push({ name, app, log, refused });
    }
  });

  afterAll(async () => {
    for (const s of services) await s.app.close();
    redis?.disconnect();
    await pool?.end();
  });

  it.each(['events', 'notifications', 'auth', 'banking', 'agents', 'data'])(
    '%s: a 5xx logged with its stack, redacted; a 4xx one line without',
    async (name) => {
      const s = services.find((x) => x.name === name)!;
      const failed = await s.app.inject({ method: 'GET', url: '/error-log-test/42' });
      expect(failed.statusCode).toBe(500);
      expectFailureLine(s.log.lines, failed.json().requestId, 'GET', '/error-log-test/:id');
      const [method, url] = s.refused.split(' ') as ['GET' | 'POST', string];
      const refused = await s.app.inject({ method, url });
      expect(refused.statusCode).toBe(401);
      expectRefusalLine(s.log.lines, refused.json().requestId, 401);
    },
  );

  it('tenant-ingress: a failing route look-up logged with its stack, redacted; an unknown host one line without', async () => {
    const log = logCapture();
    let failing = true;
    const platform = {
      query: async () => {
        if (failing) throw failure();
        return { rows: [] };
      },
    };
    const app = await buildTenantIngress({
      platform: platform as never,
      upstream: 'http://127.0.0.1:9',
      saas: {} as never,
      sessionKey: randomBytes(32).toString('base64'),
      logLevel: 'info',
      logStream: log.stream,
    });
    try {
      const failed = await app.inject({ method: 'GET', url: '/web/login', headers: { host: 'acme.erp.example.test' } });
      expect(failed.statusCode).toBe(500);
      expectFailureLine(log.lines, failed.json().requestId, 'GET', '/*');
      failing = false;
      const unknown = await app.inject({
        method: 'GET',
        url: '/web/login',
        headers: { host: 'nobody.erp.example.test' },
      });
      expect(unknown.statusCode).toBe(404);
      const line = log.lines.find((l) => (l.res as { statusCode?: number } | undefined)?.statusCode === 404)!;
      expectRefusalLine(log.lines, line.reqId as string, 404);
    } finally {
      await app.close();
    }
  });

  it.each([
    // a JSON-RPC call whose request the ingress read whole: Fastify then took the ERP's aborted body for a failure (a 500)
    ['POST', '/web/dataset/call_kw', '{"jsonrpc":"2.0","method":"call","params":{}}'],
    ['GET', '/web/content/42', undefined],
  ] as const)(
    'tenant-ingress: a client that goes away mid-response (%s %s: the ERP has answered its headers, not yet its body) is one info line, no 500, no error line',
    async (method, path, body) => {
      // an ERP whose answer starts at once and takes its time to finish (a report being rendered)
      const erp = createServer((req, res) => {
        req.on('error', () => {});
        req.resume().on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          const later = setTimeout(() => res.end('{"jsonrpc":"2.0","result":true}'), 5_000);
          res.on('close', () => clearTimeout(later));
        });
      });
      const { log, route, app } = await ingressBefore(erp, 'debug');
      try {
        await app.listen({ host: '127.0.0.1', port: 0 });
        const browser = request({
          host: '127.0.0.1',
          port: (app.server.address() as AddressInfo).port,
          method,
          path,
          headers: { host: route.host, ...(body ? { 'content-type': 'application/json' } : {}) },
        });
        browser.on('error', () => {});
        browser.end(body);
        // the ingress has the ERP's status and headers, and streams its body on
        await expect.poll(() => log.lines.some((l) => l.msg === 'response received')).toBe(true);
        browser.destroy();
        const abort = await expect
          .poll(() => log.lines.find((l) => l.msg === 'client went away before the response was complete'))
          .toBeTruthy()
          .then(() => log.lines.find((l) => l.msg === 'client went away before the response was complete')!);
        expect(abort).toMatchObject({ level: 30, code: 'UND_ERR_ABORTED' });
        // give a late failure line the time to be written
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(log.lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
        expect(log.lines.filter((l) => JSON.stringify(l).includes('"statusCode":500'))).toEqual([]);
      } finally {
        await app.close();
        erp.close();
      }
    },
  );

  it('tenant-ingress: a client that goes away mid-upload is one info line, not a failure', async () => {
    // an ERP that answers a POST once it has the whole body, as Odoo does
    const erp = createServer((req, res) => {
      req.on('error', () => {});
      req.resume().on('end', () => res.end('ok'));
    });
    const { log, route, app } = await ingressBefore(erp, 'info');
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const upload = request({
        host: '127.0.0.1',
        port: (app.server.address() as AddressInfo).port,
        method: 'POST',
        path: '/web/binary/upload_attachment',
        headers: { host: route.host, 'content-length': '1000000' },
      });
      upload.on('error', () => {});
      upload.write(Buffer.alloc(10_000));
      await expect.poll(() => log.lines.some((l) => l.msg === 'fetching from remote server')).toBe(true);
      upload.destroy();
      await expect.poll(() => log.lines.find((l) => l.msg === 'client went away before the ERP answered')).toBeTruthy();
      expect(log.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    } finally {
      await app.close();
      erp.close();
    }
  });
});

/** The tenant ingress in front of `erp` (listening on a free port), for one tenant route, its log captured. */
async function ingressBefore(erp: Server, logLevel: 'debug' | 'info') {
  await new Promise<void>((resolve) => erp.listen(0, '127.0.0.1', resolve));
  const log = logCapture();
  const route = { host: 'acme.erp.example.test', tenant: 'acme', namespace: 'plana-odoo-18', database: 'acme' };
  const app = await buildTenantIngress({
    platform: { query: async () => ({ rows: [route] }) } as never,
    upstream: `http://127.0.0.1:${(erp.address() as AddressInfo).port}`,
    saas: {} as never,
    sessionKey: randomBytes(32).toString('base64'),
    logLevel,
    logStream: log.stream,
  });
  return { log, route, app };
}
