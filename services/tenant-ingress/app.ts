/**
 * The tenant ingress: what stands in front of the tenant ERPs on real Odoo (locally with
 * ERP_BACKEND=odoo, and in docker-compose), as the routes of the tenant namespaces do in the
 * specification's cluster. A request's Host picks the tenant through the platform's `tenant_routes`
 * table; a host without a route is a 404; `/web/health` of a route whose database is being installed
 * from scratch or is missing is a 503 (§7). `/svc/saas/…` (§4.7) is answered from the platform's own
 * tier and subscription data (forwarded to the account API, ./saas.ts); everything else
 * goes to Odoo unchanged, Host included (`--db-filter=^%h$` picks the database by it), websockets
 * too (Odoo's bus), but for Odoo's session cookie, which is bound to the host that issued it
 * (./session-cookies.ts: Odoo logs out a session sent to another tenant's host; here it is left out
 * instead). The ERP stand-in plays this part itself in the default local mode.
 */
import type { IncomingMessage } from 'node:http';
import fastifyHttpProxy, { type FastifyHttpProxyOptions } from '@fastify/http-proxy';
import Fastify, { type FastifyError } from 'fastify';
import type pg from 'pg';
import { forwardSaas, type SaasForwarding } from './saas.js';
import { HostBoundSessions } from './session-cookies.js';
import { HostRouteCache } from '../../domain/tenants/host-route-cache.js';
import type { TenantRoute } from '../../domain/tenants/http-routes.js';
import { failureContext, handleError, isClientAbort, serverOptions } from '../../lib/http.js';
import type { DestinationStream } from 'pino';
import { httpMetrics } from '../../lib/metrics.js';
import { httpTracing } from '../../lib/http-tracing.js';

export interface TenantIngressOptions {
  platform: pg.Pool;
  /** Where the tenant ERPs are (one Odoo server for every tenant database). */
  upstream: string;
  saas: SaasForwarding;
  /**
   * Why no ERP worker serves a route's database (being installed from scratch, missing), or
   * undefined: `/web/health` then answers 503 (§7), as Odoo's own answers 200 for any Host.
   */
  unservedReason?: (database: string) => Promise<string | undefined>;
  /**
   * The key binding the ERP's session cookies to the host that issued them (./session-cookies.ts):
   * purposeKey(SECRETS_KEY, ERP_SESSION_KEY_PURPOSE), the same on every replica.
   */
  sessionKey: string;
  logLevel: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

/** What `sessionKey` is derived for from SECRETS_KEY. */
export const ERP_SESSION_KEY_PURPOSE = 'plana tenant-ingress erp session cookies v1';

/** The tenant host a request names (its Host without the port, lower case). */
const hostOf = (req: { headers: { host?: string } } | undefined) =>
  (req?.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();

export async function buildTenantIngress(opts: TenantIngressOptions) {
  const routes = new HostRouteCache(opts.platform);
  const sessions = new HostBoundSessions(opts.sessionKey);
  async function routeOf(req: IncomingMessage): Promise<TenantRoute | null> {
    const host = hostOf(req);
    if (!host) return null;
    return routes.routeOf(host);
  }

  const app = Fastify({
    ...serverOptions(opts.logLevel, { stream: opts.logStream, service: 'tenant-ingress' }),
    bodyLimit: 64 * 1024 * 1024,
  });
  // the platform's one error mapper: a failure of the ingress itself (its route look-up) is a
  // problem answer and a "request failed" line with the error's stack (lib/http.ts). The client's
  // abort mid-response is neither: the ERP's answer had begun (its headers read, no byte of it sent
  // on yet) when the browser went away; closing our response destroyed the ERP's body stream,
  // which ends with UND_ERR_ABORTED. Nobody waits for an answer and nothing failed here.
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isClientAbort(err, reply)) {
      req.log.info({ ...failureContext(req), code: err.code }, 'client went away before the response was complete');
      return;
    }
    return handleError(err, req, reply);
  });
  // every request counted and timed by route template (GET /metrics on METRICS_PORT, lib/metrics.ts)
  await app.register(httpMetrics, { service: 'tenant-ingress' });
  await app.register(httpTracing);
  // bodies go to Odoo as they came (XML-RPC, JSON-RPC, uploads): no parsing here
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

  app.addHook('onRequest', async (req, reply) => {
    // the ingress's own liveness (no tenant serves /readyz)
    if (req.url === '/readyz') return reply.send({ status: 'ok' });
    const route = await routeOf(req.raw);
    if (!route)
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send(`404 Not Found: no tenant at ${req.headers.host ?? '(no Host header)'}\n`);
    // the ERP sees only a session this host issued (./session-cookies.ts); the SaaS forwarding too
    const cookie = sessions.admit(req.headers.cookie, hostOf(req.raw));
    if (cookie === undefined) delete req.headers.cookie;
    else req.headers.cookie = cookie;
    const tenant = route.tenant;
    const path = req.url.split('?')[0]!;
    if (path === '/web/health' && req.method === 'GET') {
      const unserved = await opts.unservedReason?.(route.database);
      if (unserved)
        return reply.code(503).header('cache-control', 'no-store').send({ status: 'fail', reason: unserved });
    }
    if (path.startsWith('/svc/saas/')) {
      const body = req.method === 'POST' ? await readAll(req.raw) : Buffer.alloc(0);
      reply.hijack();
      if (!(await forwardSaas(opts.saas, tenant, path, req.raw, body, reply.raw)))
        reply.raw.writeHead(404, { 'content-type': 'text/plain' }).end('404 Not Found\n');
    }
  });

  await app.register(fastifyHttpProxy, {
    upstream: opts.upstream,
    websocket: true,
    // Odoo picks the tenant database by the Host the client sent
    replyOptions: {
      rewriteRequestHeaders: (req, headers) => ({ ...headers, host: req.headers.host ?? headers.host }),
      // the ERP's session cookies leave bound to the host that issued them
      rewriteHeaders: (headers, req) =>
        headers['set-cookie'] === undefined
          ? headers
          : { ...headers, 'set-cookie': sessions.bindAll(headers['set-cookie'], hostOf(req?.raw)) },
      onError: answerProxyError,
    },
    // Odoo's bus (/websocket): the handshake goes on with the Host (the database), the Origin (Odoo
    // refuses a handshake without one) and the session this host issued (the bus serves a session)
    wsClientOptions: {
      rewriteRequestHeaders: (headers: Record<string, string>, req: IncomingMessage) => ({
        ...headers,
        host: req.headers.host ?? '',
        ...(req.headers.origin ? { origin: req.headers.origin } : {}),
        ...(req.headers.cookie ? { cookie: req.headers.cookie } : {}),
      }),
    },
  });
  return app;
}

/**
 * The ERP could not be reached or answer: a 5xx through the platform's error mapper (logged with
 * its stack). When the client went away first (a browser closed mid-upload, which aborts the
 * request to the ERP), nobody waits for an answer and nothing failed here: one line says so.
 */
const answerProxyError: NonNullable<NonNullable<FastifyHttpProxyOptions['replyOptions']>['onError']> = (
  reply,
  { error },
) => {
  if (reply.request.raw.destroyed || reply.raw.destroyed) {
    const cause = (error as { cause?: { code?: string } }).cause;
    reply.request.log.info({ code: cause?.code }, 'client went away before the ERP answered');
    return;
  }
  void reply.send(error);
};

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
