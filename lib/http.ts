/**
 * What every Fastify server of the platform shares (the account API and the internal services):
 * request ids, one JSON log line per request, the text the platform accepts, and ONE place that
 * turns every error into an RFC 9457 problem (`application/problem+json` with `type`, `title`,
 * `status`, `detail`, `code`, `requestId`), whoever raises it:
 *
 * - the routes (AppError), schema validation, the content-type parsers (400 bad JSON, 413 too
 *   large, 415 wrong type) and a dependency outage (503 naming PostgreSQL, Redis or Temporal):
 *   `setErrorHandler`;
 * - the router before any route runs (malformed percent-encoding 400, a path parameter over the
 *   limit 414): `frameworkErrors`;
 * - no route: 404, or 405 with `Allow` when the path exists for other methods: `setNotFoundHandler`;
 * - Node's HTTP parser, before Fastify sees a request (malformed request line or header 400,
 *   headers too large 431, timeout 408): `clientErrorHandler`, written raw to the socket;
 * - a request arriving while the server closes: 503; one in flight then closes its connection after its answer.
 *
 * 5xx details are masked in the answer. The log (DESIGN §5): an unexpected error (5xx) is one
 * "request failed" line with the error's name, message, stack and causes (credentials and e-mail
 * addresses redacted, lib/logger.ts `errorSerializer`) and the request's method, route pattern and
 * request id; an expected refusal (4xx) is the request's one "request completed" line, without a
 * stack. Logged URLs have their credentials redacted (lib/redact.ts).
 *
 * Here: the `problemDetails` plugin (the hooks, parsers and handlers above, and the graceful close),
 * the JSON parser and the probes. Beside it: the server options (http-server-options.ts), the limits
 * (http-limits.ts), the request log (http-request-log.ts), the problems and the error handler
 * (http-problems.ts), the text check (http-text.ts) and the 405 resources (http-resources.ts).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { handleError, sendProblem } from './http-problems.js';
import { methodNotAllowed, ResourceTable } from './http-resources.js';
import { checkText } from './http-text.js';

export { BODY_LIMIT, MAX_DEPTH, MAX_PARAM_LENGTH } from './http-limits.js';
export { failureContext, isClientAbort, OneLinePerRequest } from './http-request-log.js';
export { handleError, sendProblem } from './http-problems.js';
export { serverOptions, type LogOptions } from './http-server-options.js';
export { SAFE_TEXT_PATTERN, textProblem } from './http-text.js';

/**
 * The liveness and readiness probes of a platform service: `/healthz` answers while the process
 * runs; `/readyz` pings its one dependency and answers 503 naming it when it does not answer.
 */
export function registerProbes(app: FastifyInstance, dependency: { name: string; ping: () => Promise<unknown> }) {
  const Probe = { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } as const;
  app.get('/healthz', { schema: { response: { 200: Probe } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 200: Probe } } }, async (req, reply) => {
    try {
      await dependency.ping();
      return { status: 'ready' };
    } catch (err) {
      req.log.warn({ err: (err as Error).message }, `${dependency.name} not reachable`);
      return sendProblem(reply, 'UNAVAILABLE', `Not ready: ${dependency.name} not reachable.`, {
        failing: [dependency.name],
      });
    }
  });
}

/** application/json that may be empty: a bodiless request with this content type has no body (undefined). */
export function jsonParser(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    return parse(req, text, done);
  };
}

/**
 * The graceful close: a request arriving while the server closes gets a 503 (and its connection
 * closed); one in flight when the close began ends its connection after its answer, as a keep-alive
 * connection left open would hold the close for the keep-alive timeout (72 s), and the usage flush after it.
 */
function closeGracefully(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_req, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    return void sendProblem(reply, 'UNAVAILABLE', 'The server is shutting down; retry on another replica.');
  });
  // a callback hook: an async one costs every answer a promise and a turn of the microtask queue
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', req.id);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}

/** 404, or 405 with `Allow` where the path is a resource with other methods, including one a parameter route shadows. */
function answerUnroutedMethods(app: FastifyInstance): void {
  const resources = new ResourceTable();
  app.addHook('onRoute', (route: RouteOptions) => resources.add(route.url, route.method));
  app.addHook('onRequest', (req, reply, done) => {
    const url = req.routeOptions.url;
    if (!url || !url.includes(':') || !resources.shadowsAny(url)) return done();
    const path = req.url.split('?')[0]!;
    const allowed = resources.shadowingMethods(url, path, req.method);
    if (!allowed) return done();
    return void methodNotAllowed(reply, req.method, path, allowed);
  });

  function notFound(req: FastifyRequest, reply: FastifyReply) {
    const path = req.url.split('?')[0]!;
    const allowed = resources.allowedMethods(path);
    if (allowed.size > 0 && !allowed.has(req.method)) return methodNotAllowed(reply, req.method, path, allowed);
    return sendProblem(reply, 'NOT_FOUND', `No route ${req.method} ${path}`);
  }
  // an error on the way to "no route" (e.g. a body-less QUERY lacking a content type) is still "no route"
  app.setErrorHandler((err: FastifyError, req, reply) =>
    req.is404 ? notFound(req, reply) : handleError(err, req, reply),
  );
  app.setNotFoundHandler(notFound);
}

export const problemDetails = fp(
  async (app: FastifyInstance) => {
    closeGracefully(app);
    answerUnroutedMethods(app);
    app.addHook('preValidation', checkText);
    // JSON only (a route may add its own types, as the TenantClient apply adds YAML): a body of
    // any other type is a 415, not a string that then fails validation
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonParser(app));
  },
  { name: 'problem-details' },
);
