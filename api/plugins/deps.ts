/** The account API's dependencies, built once by server.ts (or a test) and decorated on the app. */
import type { DestinationStream } from 'pino';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { DashboardService } from '../../domain/erp/dashboards.js';
import type { BankingClient } from '../../domain/banking/client.js';

export interface ApiDeps {
  config: Config;
  pool: pg.Pool;
  redis: Redis;
  temporal: Client;
  /** The ERP dashboards (domain/erp/dashboards.ts); the dashboard routes create it when not given. */
  dashboardService?: DashboardService;
  /** The banking service's client (domain/banking/client.ts); the banking routes create it when not given. */
  bankingClient?: BankingClient;
  /** Where the log lines go (default standard output); tests read them here. */
  logStream?: DestinationStream;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: ApiDeps;
  }
}
