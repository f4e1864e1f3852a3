/** Builds the account API's dependencies, listens, and closes with grace on SIGINT/SIGTERM. */
import { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import { config as loadConfig, type Config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { connectTemporal } from '../lib/temporal.js';
import { buildApp } from './app.js';
import { closeOnSignals } from '../lib/shutdown.js';
import { startConfiguredMetricsServer } from '../lib/metrics.js';
import { startTracing } from '../lib/tracing.js';

/** `logStream`: where the log lines go (default standard output). */
export async function startApi(config: Config = loadConfig(), { logStream }: { logStream?: DestinationStream } = {}) {
  const pool = createPool(config.DATABASE_URL);
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2 });
  const temporal = await connectTemporal(config);
  const app = await buildApp({ config, pool, redis, temporal, logStream });
  // ioredis reconnects by itself; /readyz reports Redis as down meanwhile.
  redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis connection error'));
  await app.listen({ host: config.API_HOST, port: config.API_PORT });
  return {
    app,
    async close() {
      await app.close();
      await temporal.connection.close();
      redis.disconnect();
      await pool.end();
    },
  };
}

/** How long a graceful close may take before the process exits anyway (a dependency that is gone can hang it). */
const SHUTDOWN_DEADLINE_MS = 15_000;

if (import.meta.url === `file://${process.argv[1]}`) {
  startTracing('account-api', loadConfig());
  const api = await startApi();
  const metrics = await startConfiguredMetricsServer(loadConfig());
  closeOnSignals(() => api.close().then(() => metrics?.close()), {
    deadlineMs: SHUTDOWN_DEADLINE_MS,
    log: (msg) => api.app.log.error(msg),
  });
}
