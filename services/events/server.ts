import { getPriority, setPriority } from 'node:os';
import { Redis } from 'ioredis';
import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { buildEventsApp } from './app.js';
import { INGESTION_PAIR, IngestionKeyRing, markSeen, type IngestionPair } from '../../domain/erp-events/ingestion.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { runAsMain, stopInOrder } from '../../lib/service-app.js';

export const EVENTS_TARGET = 'events';

/**
 * Starts the events service; `close()` stops it. `ingestionPair`: the service-key pair whose keys
 * the ERP tenant tokens are made from (erp → event-ingestion; tests rotate a pair of their own).
 */
export async function startEvents(cfg = config(), opts: { ingestionPair?: IngestionPair } = {}) {
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  // the registry of accepted service keys (and their usage) lives in the platform database
  const pool = createPool(cfg.DATABASE_URL, 3);
  const serviceKeys = await startServiceKeyVerifier(EVENTS_TARGET, pool, cfg);
  // the ERP ingestion is the target of its own pair: its keys are checked (and their use recorded) by a verifier of that target
  const ingestionPair = opts.ingestionPair ?? INGESTION_PAIR;
  const ingestionKeys = await startServiceKeyVerifier(ingestionPair.target, pool, cfg);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  const ring = new IngestionKeyRing({
    // and the keys revoked in the last 90 days: a tenant still posting with one (its rules missed a
    // rotation) gets 401 and raises the revoked-key alert, not just a 401 like a wrong token
    keys: (caller, target) => secrets.acceptedVersions(caller, target, { revokedWithinMs: 90 * 24 * 3600_000 }),
    pair: ingestionPair,
    verifier: ingestionKeys,
    ttlMs: cfg.SERVICE_KEY_SECRET_TTL_MS,
  });
  const app = await buildEventsApp({
    redis,
    serviceKeys,
    stream: cfg.EVENTS_STREAM,
    maxLen: cfg.EVENTS_STREAM_MAXLEN,
    dedupeTtlSeconds: cfg.EVENTS_DEDUPE_TTL_SECONDS,
    logLevel: cfg.LOG_LEVEL,
    ingestion: {
      authenticate: (tenant, token) => ring.authenticate(tenant, token),
      workspaceOf: async (tenant) => {
        const { rows } = await pool.query<{ slug: string | null }>(
          'SELECT w.slug FROM tenants t LEFT JOIN workspaces w ON w.id = t.workspace_id WHERE t.name = $1',
          [tenant],
        );
        return rows[0] ? rows[0].slug : undefined;
      },
      seen: (tenant, eventId) => markSeen(pool, tenant, [eventId], 'odoo'),
    },
  });
  await app.listen({ host: cfg.EVENTS_HOST, port: cfg.EVENTS_PORT });
  return {
    app,
    serviceKeys,
    ingestionKeys,
    close: stopInOrder(
      () => app.close(),
      () => serviceKeys.close(),
      () => ingestionKeys.close(),
      () => pool.end(),
      () => redis.disconnect(),
    ),
  };
}

/**
 * Lowers this process's CPU priority to nice `nice` (never raises it: a service started lower
 * stays there). The intake yields the CPU to the delivery path on a shared host: with the two at
 * the same priority, a burst's events came in faster than they were delivered and queued.
 */
export function yieldCpuToDelivery(nice: number): void {
  if (getPriority() < nice) setPriority(nice);
}

await runAsMain(import.meta.url, 'events', () => {
  const cfg = config();
  yieldCpuToDelivery(cfg.EVENTS_NICE);
  return startEvents(cfg);
});
