/**
 * The events service (specification §4.3, §6): accepts CloudEvents 1.0 envelopes and appends
 * them to a Redis stream with bounded trimming (./publisher.ts: idempotent per CloudEvent
 * `source` + `id`); manages consumer groups; reports the stream's state (./stream-routes.ts). Every
 * route but the probes and the ERP ingestion (./odoo-ingestion.ts, the tenant's own token) needs
 * `X-API-Key`.
 */
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { registerProbes } from '../../lib/http.js';
import { buildServiceApp } from '../../lib/service-app.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { registerKeyedRoutes } from '../service-routes.js';
import { registerOdooIngestion, type ErpIngestion } from './odoo-ingestion.js';
import { EventPublisher } from './publisher.js';
import { registerStreamRoutes } from './stream-routes.js';
import type { DestinationStream } from 'pino';

export interface EventsDeps {
  redis: Redis;
  /** The service-key check of this target (domain/service-keys/verifier.ts): every registered caller may call. */
  serviceKeys: ServiceKeyCheck;
  stream: string;
  /** Approximate number of entries the stream keeps (XADD MAXLEN ~). */
  maxLen: number;
  /** How long a published event's identity is remembered for de-duplication (seconds). */
  dedupeTtlSeconds: number;
  logLevel?: string;
  /** Event ingestion from the tenant ERPs (domain/erp-events/ingestion.ts). */
  ingestion?: ErpIngestion;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

/** Accepted content types: CloudEvents structured mode, and plain JSON. */
const JSON_TYPES = ['application/cloudevents+json', 'application/json'];

export async function buildEventsApp(deps: EventsDeps): Promise<FastifyInstance> {
  const app = await buildServiceApp(deps.logLevel, {
    service: 'events',
    jsonOnly: JSON_TYPES,
    logStream: deps.logStream,
  });
  const startedAt = Date.now();
  const publisher = new EventPublisher(deps);
  registerProbes(app as unknown as FastifyInstance, { name: 'redis', ping: () => deps.redis.ping() });
  if (deps.ingestion) registerOdooIngestion(app, deps.ingestion, publisher);
  await registerKeyedRoutes(app, deps.serviceKeys, {}, (v1) =>
    registerStreamRoutes(v1, { ...deps, publisher, startedAt }),
  );
  return app;
}
