/**
 * The shared frame of the platform's internal services: a Fastify app with the platform's server
 * options (one log line per request, request ids, body limit), RFC 9457 problem answers and request
 * metrics (lib/metrics.ts), and the way a service's module runs as a process (started when run
 * directly with its metrics server on METRICS_PORT, stopped on SIGINT/SIGTERM: ./shutdown.ts).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { DestinationStream } from 'pino';
import { jsonParser, problemDetails, serverOptions } from './http.js';
import { closeOnSignals } from './shutdown.js';
import { httpMetrics, startConfiguredMetricsServer } from './metrics.js';
import { httpTracing } from './http-tracing.js';
import { config as loadConfig } from './config.js';
import { startTracing } from './tracing.js';

export interface ServiceAppOptions {
  /** The service's name in its metrics (the `service` label of plana_http_requests_total, lib/metrics.ts) and in the log store. */
  service: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
  /** Accept only these JSON content types (any other body type is answered 415). */
  jsonOnly?: string[];
}

/** A service's Fastify app: the platform's server options and problem details, TypeBox schemas. */
export async function buildServiceApp(logLevel: string | undefined, opts: ServiceAppOptions) {
  const app = Fastify(
    serverOptions(logLevel ?? 'info', { stream: opts.logStream, service: opts.service }),
  ).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(problemDetails);
  await app.register(httpMetrics, { service: opts.service });
  await app.register(httpTracing);
  if (opts.jsonOnly) {
    // without the default text/plain parser, any other type is answered 415
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(opts.jsonOnly, { parseAs: 'string' }, jsonParser(app as unknown as FastifyInstance));
  }
  return app;
}

export type ServiceApp = Awaited<ReturnType<typeof buildServiceApp>>;

/**
 * When the module at `moduleUrl` is the process's entry point: starts tracing as `service` when it
 * is configured (lib/tracing.ts), then the module and its metrics server (METRICS_PORT,
 * lib/metrics.ts), and stops both on SIGINT or SIGTERM (closeOnSignals).
 */
export async function runAsMain(
  moduleUrl: string,
  service: string,
  start: () => Promise<{ close(): Promise<unknown> }>,
): Promise<void> {
  if (moduleUrl !== `file://${process.argv[1]}`) return;
  startTracing(service, loadConfig());
  const running = await start();
  const metrics = await startConfiguredMetricsServer(loadConfig());
  closeOnSignals(async () => {
    await running.close();
    await metrics?.close();
  });
}

/** A service's `close()`: stops its parts one after the other, in the order given. */
export function stopInOrder(...steps: (() => unknown)[]): () => Promise<void> {
  return async () => {
    for (const step of steps) await step();
  };
}

/** Redis connection errors as warnings in the service's log (ioredis reconnects by itself). */
export function logRedisErrors(
  redis: { on(event: 'error', listener: (err: Error) => void): unknown },
  log: FastifyBaseLogger,
): void {
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
}
