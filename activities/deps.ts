/** The platform connections every activity group is built from (config, pools, Temporal, chat, routes, secrets); the worker builds them once (see worker/index.ts). */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createChatClient, type ChatClient } from '../domain/tenants/chat.js';
import type { Config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { backupObjectStore, type ObjectStore } from '../lib/object-store.js';
import { connectTemporal } from '../lib/temporal.js';
import { createTableRouteDriver, type RouteDriver } from '../domain/tenants/http-routes.js';
import type { SecretStore } from '../domain/service-keys/secret-store.js';
import type { ErpInstaller } from '../domain/erp/from-scratch.js';
import { createSecretStore } from '../domain/service-keys/secret-store-factory.js';

export interface PlatformDeps {
  config: Config;
  /** The platform database (DATABASE_URL). */
  platformPool: pg.Pool;
  /** Admin connection to the ERP's PostgreSQL server (ERP_DATABASE_URL). */
  erpAdminPool: pg.Pool;
  /** For the per-tenant backup schedules. */
  temporal: Client;
  chat: ChatClient;
  routes: RouteDriver;
  /** Where the worker reads the service keys it sends (caller `worker`). */
  secrets: SecretStore;
  /** Installs a tenant database from scratch when its template is missing (the worker picks it for the ERP). */
  erpInstaller?: ErpInstaller;
  /** The S3-compatible store backups are kept in (BACKUP_S3_*). */
  backupStore: ObjectStore;
}

/** The worker's name in the service-key inventory (domain/service-keys/inventory.ts). */
export const WORKER_CALLER = 'worker';

/** Builds the dependencies from the configuration; `close` releases the pools and the connection. */
export async function connectPlatformDeps(config: Config): Promise<PlatformDeps & { close(): Promise<void> }> {
  const platformPool = createPool(config.DATABASE_URL, 10);
  const erpAdminPool = createPool(config.ERP_DATABASE_URL, 5);
  const temporal = await connectTemporal(config);
  // the worker's keys (worker → notifications, events), reported to their targets while held
  const secrets = createSecretStore(config, platformPool);
  const backupStore = backupObjectStore(config);
  return {
    config,
    platformPool,
    erpAdminPool,
    temporal,
    chat: createChatClient({ baseUrl: config.CHAT_URL, token: config.CHAT_TOKEN, teamId: config.CHAT_TEAM_ID }),
    // the local route driver; a Kubernetes driver would implement the same RouteDriver interface
    routes: createTableRouteDriver(platformPool),
    secrets,
    backupStore,
    async close() {
      secrets.close();
      backupStore.close();
      await temporal.connection.close();
      await Promise.all([platformPool.end(), erpAdminPool.end()]);
    },
  };
}
