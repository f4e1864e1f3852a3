/**
 * `npm run bench:events`: the events service's publish rate over HTTP. Starts a private Redis (and a
 * PostgreSQL for the service-key registry) in a
 * temporary folder and the events service, then POSTs CloudEvents with autocannon for a few
 * seconds (every request a new event id, so each one is appended), and prints the figures:
 * requests per second, latency percentiles, and the stream length afterwards (bounded by MAXLEN ~).
 *
 * BENCH_SECONDS (default 5) and BENCH_CONNECTIONS (default 20) tune the run.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { parseConfig } from '../../lib/config.js';
import { freePort, startPostgres, startRedis, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { startEvents } from '../../services/events/server.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const dir = throwAwayDir('plana-bench-events-');

try {
  const redisServer = await startRedis({ dir: path.join(dir, 'redis'), port: await freePort() });
  // the events service reads its accepted service keys from the registry in PostgreSQL
  const pgServer = await startPostgres({ dir: path.join(dir, 'postgres'), port: await freePort() });
  const pool = createPool(pgServer.url, 2);
  await migrate(pool);
  const port = await freePort();
  const cfg = parseConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    DATABASE_URL: pgServer.url,
    REDIS_URL: redisServer.url,
    EVENTS_PORT: String(port),
    EVENTS_URL: `http://127.0.0.1:${port}`,
    EVENTS_STREAM: 'bench-events',
  });
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  const apiKey = (await secrets.current('worker', 'events')).key;
  await pool.end();
  const events = await startEvents(cfg);

  let n = 0;
  const envelope = (id: string) =>
    JSON.stringify({
      specversion: '1.0',
      id,
      source: '/plana/bench',
      type: 'bench.published',
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      data: { tenant: 'acme', amount: 42, note: 'x'.repeat(200) },
    });
  const body = envelope(`bench-${process.pid}-000000`);
  const result = await autocannon({
    url: `${cfg.EVENTS_URL}/api/v1/events`,
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json', 'x-api-key': apiKey },
    // every request a new event id, so each one is appended (not answered as a duplicate)
    requests: [
      { setupRequest: (req) => ({ ...req, body: envelope(`bench-${process.pid}-${String(++n).padStart(6, '0')}`) }) },
    ],
    connections,
    duration: seconds,
  });

  const redis = new Redis(redisServer.url);
  const length = await redis.xlen(cfg.EVENTS_STREAM);
  redis.disconnect();
  await events.close();

  const accepted = result['2xx'];
  console.log(`
events service publish rate (${seconds} s, ${connections} connections, ${Buffer.byteLength(body)}-byte envelopes)
  requests/s     avg ${result.requests.average.toFixed(0)}  (min ${result.requests.min}, max ${result.requests.max})
  accepted (202) ${accepted} of ${result.requests.total}; errors ${result.errors}, non-2xx ${result.non2xx}
  latency ms     p50 ${result.latency.p50}  p90 ${result.latency.p90}  p99 ${result.latency.p99}  max ${result.latency.max}
  stream length  ${length} after ${accepted} appends (MAXLEN ~ ${cfg.EVENTS_STREAM_MAXLEN})
`);
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
