/**
 * The HTTP servers' part of tracing (lib/tracing.ts): a SERVER span around every request, started
 * before Fastify sees the request, so that the request id (http-server-options.ts `requestIdOf`)
 * is the span's trace id and every log line and problem body names the trace. The span is the
 * child of the caller's `traceparent` when one came. `httpTracing` names it after the route and
 * marks a 5xx failed.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import fp from 'fastify-plugin';
import { activeTracing, contextFromHeaders, tracer } from './tracing.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Runs each request of `handler` in a SERVER span of its own. */
function tracedRequests(handler: Handler): Handler {
  return (req, res) => {
    const parent = contextFromHeaders(req.headers);
    const span = tracer().startSpan(`${req.method}`, { kind: SpanKind.SERVER }, parent);
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => handler(req, res));
  };
}

/**
 * Fastify's `serverFactory` while tracing is on (undefined otherwise: Fastify makes its own
 * server): the server Fastify would make, with each request traced.
 */
export function tracedServerFactory(): FastifyServerOptions['serverFactory'] {
  if (!activeTracing()) return undefined;
  return (handler, fastifyOptions) => {
    // what Fastify gives its own server (lib/server.js), its defaults filled in
    const opts = fastifyOptions as {
      http?: ServerOptions;
      keepAliveTimeout: number;
      requestTimeout: number;
      connectionTimeout: number;
    };
    const server: Server = createServer(opts.http ?? {}, tracedRequests(handler as Handler));
    server.keepAliveTimeout = opts.keepAliveTimeout;
    server.requestTimeout = opts.requestTimeout;
    server.setTimeout(opts.connectionTimeout);
    return server;
  };
}

/** Names the request's span after its route (`GET /api/portal/odoo/:slug/kpis`) and marks a 5xx failed. */
export const httpTracing = fp(
  async (app: FastifyInstance) => {
    if (!activeTracing()) return;
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const span = trace.getActiveSpan();
      const route = request.routeOptions.url;
      if (span && route) {
        span.updateName(`${request.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      if (span && reply.statusCode >= 500)
        span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${reply.statusCode}` });
      done();
    });
  },
  { name: 'plana-http-tracing' },
);
