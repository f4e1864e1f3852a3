import { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { AUTH_TARGET, buildAuthApp } from './app.js';
import { logRedisErrors, runAsMain, stopInOrder } from '../../lib/service-app.js';

/**
 * Starts the auth service (port AUTH_PORT: 8001 locally, 8000 in its own container); `close()` stops it.
 * `logStream`: where the log lines go (default standard output).
 */
export async function startAuth(cfg = config(), { logStream }: { logStream?: DestinationStream } = {}) {
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  const pool = createPool(cfg.DATABASE_URL, 5);
  const serviceKeys = await startServiceKeyVerifier(AUTH_TARGET, pool, cfg);
  const app = await buildAuthApp({ pool, redis, config: cfg, serviceKeys, logStream });
  logRedisErrors(redis, app.log);
  await app.listen({ host: cfg.AUTH_HOST, port: cfg.AUTH_PORT });
  return {
    app,
    serviceKeys,
    close: stopInOrder(
      () => app.close(),
      () => serviceKeys.close(),
      () => pool.end(),
      () => redis.disconnect(),
    ),
  };
}

await runAsMain(import.meta.url, 'auth', () => startAuth());
