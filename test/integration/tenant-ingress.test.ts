/**
 * The tenant ingress (services/tenant-ingress), what stands in front of real Odoo: here in front of
 * an ERP stand-in that does NOT answer /svc/saas itself (as real Odoo does not), on the run's real
 * PostgreSQL, Redis, Temporal and HTTP. A tenant provisions through it (XML-RPC and the web session
 * reach the right database by Host); its host answers /svc/saas from the platform's data; a host
 * without a route is a 404; /web/health of a route whose database is not there is a 503.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-servers.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import { createLogger } from '../../lib/logger.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import {
  applyTenant,
  isReady,
  runErpDatabaseUrl,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';
import { testConfig } from '../support/env.js';
import { tenantAdminPassword } from '../../domain/erp/api-user.js';
import { unservedDatabaseReason } from '../../domain/erp/from-scratch.js';
import { createPool } from '../../lib/db.js';
import { buildTenantIngress, type TenantIngressOptions } from '../../services/tenant-ingress/app.js';
import { HostBoundSessions } from '../../services/tenant-ingress/session-cookies.js';
import { createWorkspaceWithTenant } from '../support/erp-tenant.js';

let odoo: ErpStandIn;
let p: TenantPlatform;

beforeAll(async () => {
  const cfg = await testConfig();
  // "Odoo": an ERP that serves XML-RPC and web sessions but no /svc/saas (503 there without forwarding)
  odoo = await startErpStandIn({
    host: '127.0.0.1',
    port: await freePort(),
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: runErpDatabaseUrl(),
    logger: createLogger({ name: 'odoo', level: 'warn' }),
    // Odoo alone: a session sent to another tenant's host is logged out, as by Odoo's dbfilter
    behindIngress: true,
  });
  p = await startTenantPlatform({}, { ingressTo: odoo.url });
  await p.startWorker();
}, 120_000);

afterAll(async () => {
  await p?.close();
  await odoo?.close();
});

function call(
  host: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; cookie?: string } = {},
): Promise<{ status: number; type: string; body: string; cookie?: string }> {
  const url = new URL(p.erpUrl);
  const headers: Record<string, string> = { host };
  if (opts.key) headers['x-api-key'] = opts.key;
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body,
          cookie: res.headers['set-cookie']?.[0]?.split(';')[0],
        }),
      );
    });
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

describe('the tenant ingress in front of an ERP', () => {
  const name = uniqueTenant('ing');
  let host: string;

  it('provisions a tenant through it: Ready, the API user made in a web session through the ingress', async () => {
    expect(await applyTenant(p, name)).toBe('created');
    const ready = await waitForStatus(p, name, isReady, 60_000);
    host = ready.resources.database.externalName;
    expect(ready.steps.find((s) => s.step === 'ensure-api-user')?.outcome).toBe('ok');
    expect(ready.steps.find((s) => s.step === 'probe-health')?.message ?? '').toContain('authenticated');
  });

  it("answers the tenant's /svc/saas from the platform, which the ERP behind it does not serve", async () => {
    // the ERP itself has no SaaS endpoints: 404, as on Odoo
    const direct = await new Promise<number>((resolve, reject) => {
      const url = new URL(odoo.url);
      request({ hostname: url.hostname, port: url.port, path: '/svc/saas/tiers', headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(direct).toBe(404);
    // the tenant's host is public: not for anyone, but for the ERP's logged-in users (the ERP says who is)
    const anonymous = await call(host, 'GET', '/svc/saas/tiers');
    expect(anonymous.status).toBe(401);
    expect(anonymous.type).toMatch(/^application\/problem\+json/);
    expect((await call(host, 'GET', '/svc/saas/tiers', { cookie: 'session_id=forged' })).status).toBe(401);
    const login = await call(host, 'POST', '/web/session/authenticate', {
      body: {
        jsonrpc: '2.0',
        method: 'call',
        params: { db: host, login: 'admin', password: tenantAdminPassword(p.cfg.SECRETS_KEY, host) },
      },
    });
    expect(login.cookie).toMatch(/^session_id=/);
    const tiers = await call(host, 'GET', '/svc/saas/tiers', { cookie: login.cookie });
    expect(tiers.status).toBe(200);
    expect(JSON.parse(tiers.body)).toMatchObject({ tenant: name });
    expect(JSON.parse(tiers.body).tiers.map((t: { code: string }) => t.code)).toEqual(['starter', 'pro', 'enterprise']);
  });

  it('passes a callback with its caller key to the account API, which decides', async () => {
    const job = `job-${name}`;
    expect(
      (await call(host, 'POST', `/svc/saas/job/${job}/update`, { body: { state: 'running', progress: 5 } })).status,
    ).toBe(401);
    const key = (await new PgSecretStore(p.pool, p.cfg.SECRETS_KEY).current('saas-jobs', 'account-api')).key;
    const ok = await call(host, 'POST', `/svc/saas/job/${job}/update`, {
      key,
      body: { state: 'running', progress: 5 },
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ job, tenant: name, progress: 5 });
  });

  it("one tenant's ERP session cookie sent to another tenant's host: signed out there, and still valid on its own host (Odoo behind it would have logged it out)", async () => {
    const other = uniqueTenant('ing2');
    expect(await applyTenant(p, other)).toBe('created');
    const otherHost = (await waitForStatus(p, other, isReady, 60_000)).resources.database.externalName;
    const login = await call(host, 'POST', '/web/session/authenticate', {
      body: {
        jsonrpc: '2.0',
        method: 'call',
        params: { db: host, login: 'admin', password: tenantAdminPassword(p.cfg.SECRETS_KEY, host) },
      },
    });
    const cookie = login.cookie!;
    expect(cookie).toMatch(/^session_id=/);
    const sessionInfo = async (h: string) =>
      JSON.parse(
        (
          await call(h, 'POST', '/web/session/get_session_info', {
            cookie,
            body: { jsonrpc: '2.0', method: 'call', params: {} },
          })
        ).body,
      ) as { result?: { uid?: number }; error?: unknown };
    expect((await sessionInfo(host)).result?.uid).toBeGreaterThan(0);
    // the other tenant's host: signed out (the ERP never sees the session)
    expect((await sessionInfo(otherHost)).error).toMatchObject({ data: { name: 'odoo.http.SessionExpiredException' } });
    expect((await call(otherHost, 'GET', '/svc/saas/tiers', { cookie })).status).toBe(401);
    // its own host: still signed in
    expect((await sessionInfo(host)).result?.uid).toBeGreaterThan(0);
    expect((await call(host, 'GET', '/svc/saas/tiers', { cookie })).status).toBe(200);
    // the session id the ERP issued, without the ingress's binding, is not taken either
    const bare = cookie.slice(0, cookie.lastIndexOf('.'));
    expect((await call(host, 'GET', '/svc/saas/tiers', { cookie: bare })).status).toBe(401);
  });

  it('sends everything else to the ERP with the Host unchanged, and 404s a host without a route', async () => {
    const login = await call(host, 'GET', '/web/login');
    expect(login.status).toBe(200);
    expect(login.body).toContain(host); // the ERP's page for this tenant
    const unknown = await call(`nobody.${p.cfg.TENANT_DOMAIN}`, 'GET', '/web/login');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain('no tenant at');
    // its own liveness, for the container's health check
    expect((await call('localhost', 'GET', '/readyz')).status).toBe(200);
  });
});

/**
 * An ingress of its own in front of `upstream` (a server on loopback standing for Odoo), and a
 * routed tenant host: a workspace's tenant whose route names its database after the host.
 */
async function ingressInFrontOf(upstream: Server, opts: Pick<TenantIngressOptions, 'unservedReason'> = {}) {
  const sessionKey = randomBytes(32).toString('base64');
  const ingress = await buildTenantIngress({
    platform: p.pool,
    upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    saas: { accountApiUrl: p.cfg.ACCOUNT_API_URL, key: async () => '', loggedIn: async () => false },
    sessionKey,
    logLevel: 'warn',
    ...opts,
  });
  const name = await createWorkspaceWithTenant(p.pool, { tier: 'starter', version: '18' });
  const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
  await p.pool.query(
    `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, 'plana-odoo-18', $1)`,
    [host, name],
  );
  return { ingress, host, sessionKey };
}

describe('/web/health of a routed tenant whose database is not there (§7)', () => {
  it('answers 503 saying why (being installed from scratch, or missing) in front of an ERP that answers 200 for any Host, as real Odoo does', async () => {
    // "real Odoo": /web/health passes for any Host, without opening a database
    const upstream = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'pass' }));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const erpAdmin = createPool(runErpDatabaseUrl(), 2);
    const { ingress, host } = await ingressInFrontOf(upstream, {
      unservedReason: (database) => unservedDatabaseReason(erpAdmin, database),
    });
    const health = async () => {
      const res = await ingress.inject({ method: 'GET', url: '/web/health', headers: { host } });
      return { status: res.statusCode, body: res.json() as unknown };
    };
    const id = (db: string) => pg.escapeIdentifier(db);
    try {
      expect(await health()).toEqual({
        status: 503,
        body: { status: 'fail', reason: `database "${host}" does not exist` },
      });
      await erpAdmin.query(`CREATE DATABASE ${id(`${host}__installing`)}`);
      expect(await health()).toEqual({
        status: 503,
        body: { status: 'fail', reason: `database "${host}" is being installed from scratch` },
      });
      await erpAdmin.query(`ALTER DATABASE ${id(`${host}__installing`)} RENAME TO ${id(host)}`);
      expect(await health()).toEqual({ status: 200, body: { status: 'pass' } });
    } finally {
      await erpAdmin.query(`DROP DATABASE IF EXISTS ${id(host)}`);
      await erpAdmin.query(`DROP DATABASE IF EXISTS ${id(`${host}__installing`)}`);
      await ingress.close();
      await erpAdmin.end();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});

describe("Odoo's bus websocket through the ingress", () => {
  it('reaches the ERP with the Host, the Origin and the session this host issued (Odoo refuses a handshake without an Origin, and serves the bus only to a session)', async () => {
    // the ERP: records the handshake it gets and completes it (RFC 6455 §4.2.2)
    const handshakes: Record<string, string | string[] | undefined>[] = [];
    const upstream = createServer();
    upstream.on('upgrade', (req, socket) => {
      handshakes.push(req.headers);
      const accept = createHash('sha1')
        .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64');
      socket.end(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { ingress, host, sessionKey } = await ingressInFrontOf(upstream);
    // the cookie the ingress gave this browser for the ERP's session `s3ss10n` on this host
    const [bound] = new HostBoundSessions(sessionKey).bindAll('session_id=s3ss10n; Path=/; HttpOnly', host);
    const cookie = bound!.split(';')[0]!;
    try {
      await ingress.listen({ host: '127.0.0.1', port: 0 });
      const { port } = ingress.server.address() as AddressInfo;
      // the web client's worker opening /websocket, as a browser sends it
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({
          hostname: '127.0.0.1',
          port,
          path: '/websocket?version=18.0-2',
          headers: {
            host,
            origin: `http://${host}`,
            cookie: `frontend_lang=en_US; ${cookie}`,
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': randomBytes(16).toString('base64'),
          },
        });
        req.on('upgrade', (res, socket) => {
          // held open while the ingress connects to the ERP (it answers the browser first)
          setTimeout(() => socket.destroy(), 2_000);
          resolve(res.statusCode ?? 0);
        });
        req.on('response', (res) => resolve(res.statusCode ?? 0));
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(101);
      await expect.poll(() => handshakes.length).toBe(1);
      expect(handshakes[0]).toMatchObject({
        host,
        origin: `http://${host}`,
        cookie: 'frontend_lang=en_US; session_id=s3ss10n',
      });
    } finally {
      await ingress.close();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
