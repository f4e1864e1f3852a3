/** The account API's dependencies, built once by server.ts (or a test) and decorated on the app. */
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';

export interface ApiDeps {
  config: Config;
  pool: pg.Pool;
  redis: Redis;
  temporal: Client;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: ApiDeps;
  }
}
