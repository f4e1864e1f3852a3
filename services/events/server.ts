import { Redis } from 'ioredis';
import { config } from '../../lib/config.js';
import { buildEventsApp } from './app.js';

/** Starts the events service; `close()` stops it. */
export async function startEvents(cfg = config()) {
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  const app = await buildEventsApp({
    redis,
    acceptedKeys: () => cfg.EVENTS_ACCEPTED_KEYS,
    stream: cfg.EVENTS_STREAM,
    maxLen: cfg.EVENTS_STREAM_MAXLEN,
    dedupeTtlSeconds: cfg.EVENTS_DEDUPE_TTL_SECONDS,
    logLevel: cfg.LOG_LEVEL,
  });
  await app.listen({ host: cfg.EVENTS_HOST, port: cfg.EVENTS_PORT });
  return {
    app,
    async close() {
      await app.close();
      redis.disconnect();
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const svc = await startEvents();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void svc.close());
}
