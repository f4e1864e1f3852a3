/**
 * Writes the account API's OpenAPI document (generated from the route schemas) without a running
 * API or database: the app is built with a pool that answers no rows and a throwaway Redis on a
 * Unix socket (the key-check plugin subscribes at start), then `app.swagger()` is written out.
 * `npm run web:api` runs this and generates the portal's types (web/src/api/schema.d.ts) with
 * openapi-typescript.
 *
 *   tsx scripts/openapi.ts [out.json]      (default web/openapi.json)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { buildApp } from '../api/app.js';
import { config as loadConfig } from '../lib/config.js';

const out = process.argv[2] ?? new URL('../web/openapi.json', import.meta.url).pathname;
const dir = await mkdtemp(join(tmpdir(), 'plana-openapi-'));
const socket = join(dir, 'redis.sock');
const redisServer = spawn('redis-server', ['--port', '0', '--unixsocket', socket, '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
try {
  for (let i = 0; !existsSync(socket); i++) {
    if (i > 100) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  const config = { ...loadConfig(), LOG_LEVEL: 'silent' as const, REDIS_URL: socket };
  // set-up queries (the execution log's partitions) get no rows; nothing else touches the pool
  const pool = {
    options: { host: dir },
    query: async () => ({ rows: [], rowCount: 0 }),
    on: () => pool,
    end: async () => {},
  } as unknown as pg.Pool;
  const app = await buildApp({ config, pool, redis: new Redis(socket), temporal: {} as Client });
  // @fastify/swagger collects the shared schemas in the first onReady hook; the service-key
  // verifier's hook after it fails here (no PostgreSQL to LISTEN on), which the document does not need
  await app.ready().then(
    () => {},
    () => {},
  );
  const doc = app.swagger();
  await writeFile(out, JSON.stringify(doc, null, 2) + '\n');
  console.log(`OpenAPI document: ${Object.keys(doc.paths ?? {}).length} paths → ${out}`);
} finally {
  redisServer.kill();
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
