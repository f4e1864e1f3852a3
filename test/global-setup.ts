/**
 * Starts the real servers (PostgreSQL, Redis, Temporal, a Kubernetes API server, the object store and
 * the log store) once for the whole
 * test run, on free loopback ports in a throw-away folder, bundles the workflow code once, and tears
 * everything down afterwards (also when tests fail). Test files read the addresses with `inject(...)` (see test/support/env.ts).
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleWorkflowCode } from '@temporalio/worker';
import {
  startThrowAwayLogStore,
  startThrowAwayObjectStore,
  startThrowAwayServers,
  startThrowAwayZipkin,
  stopAll,
  throwAwayDir,
} from '../scripts/local-servers.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';
import { parseConfig } from '../lib/config.js';
import { ensureServiceKeys } from '../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { workflowsPath } from '../worker/index.js';
import { workflowInterceptorModules } from '../worker/tracing.js';
import { ensureErpTemplates } from '../scripts/erp-templates.js';
import { installTenantClientCrd } from '../scripts/tenant-client-crd.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
    temporalAddress: string;
    /** The run's Kubernetes API server: a kubeconfig with its admin credential (scripts/local-kubernetes.ts). */
    kubeconfigPath: string;
    workflowBundlePath: string;
    dataDir: string;
    /** The BACKUP_S3_* settings of the run's SeaweedFS (the backups' object store). */
    objectStoreEnv: Record<string, string>;
    /** The run's log store (VictoriaLogs, 90-day retention): LOG_STORE_URL. */
    logStoreUrl: string;
    /** The run's Zipkin (scripts/local-zipkin.ts): its URL, and the settings that send spans to it. */
    zipkinUrl: string;
    zipkinEnv: Record<string, string>;
    /** The current keys of the platform's pairs (bootstrapped here; see test/support/service-keys.ts). */
    serviceKeys: { operator: string; provisioning: string; events: string; notifications: string };
  }
}

export default async function setup(project: TestProject) {
  const dir = throwAwayDir('plana-test-');
  try {
    const [{ pg, redis, temporal, kube }, objectStore, logStore, zipkin, bundle] = await Promise.all([
      startThrowAwayServers(dir),
      startThrowAwayObjectStore(dir),
      startThrowAwayLogStore(dir),
      startThrowAwayZipkin(dir),
      bundleWorkflowCode({ workflowsPath, workflowInterceptorModules, logger: quietLogger }),
    ]);
    await installTenantClientCrd(kube.kubeconfigPath);
    const pool = createPool(pg.url, 2);
    await migrate(pool);
    // first start: every pair of the inventory gets its key (registry + secret store), as `npm run dev` does
    const secrets = new PgSecretStore(pool, parseConfig({}).SECRETS_KEY);
    await ensureServiceKeys(pool, secrets);
    const serviceKeys = {
      operator: (await secrets.current('operator', 'account-api')).key,
      provisioning: (await secrets.current('provisioning', 'account-api')).key,
      events: (await secrets.current('worker', 'events')).key,
      notifications: (await secrets.current('worker', 'notifications')).key,
    };
    await pool.end();
    // the ERP template databases (tier × version) that tenant databases are cloned from
    await ensureErpTemplates(pg.urlFor('postgres'));

    const workflowBundlePath = path.join(dir, 'workflow-bundle.js');
    writeFileSync(workflowBundlePath, bundle.code);

    project.provide('databaseUrl', pg.url);
    project.provide('redisUrl', redis.url);
    project.provide('temporalAddress', temporal.address);
    project.provide('kubeconfigPath', kube.kubeconfigPath);
    project.provide('workflowBundlePath', workflowBundlePath);
    project.provide('dataDir', dir);
    project.provide('objectStoreEnv', objectStore.env);
    project.provide('logStoreUrl', logStore.url);
    project.provide('zipkinUrl', zipkin.url);
    project.provide('zipkinEnv', zipkin.env);
    project.provide('serviceKeys', serviceKeys);
  } catch (err) {
    await stopAll();
    throw err;
  }

  return async () => {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  };
}

const noop = () => {};
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
