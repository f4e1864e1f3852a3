/**
 * The platform's own parts as `npm run dev` runs them in one process (each as its own server, as in
 * production), after the database is migrated and seeded: the ERP (stand-in or real Odoo behind the
 * tenant ingress), the services, the stand-ins of the outside peers, the worker with its schedules,
 * and the TenantClient controller as a child process.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';
import { createLogger } from '../lib/logger.js';
import { connectTemporal } from '../lib/temporal.js';
import { startMetricsServer } from '../lib/metrics.js';
import { ensureServiceKeys } from '../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { startTenantIngress } from '../services/tenant-ingress/server.js';
import { startNotifications } from '../services/notifications/server.js';
import { startBanking } from '../services/banking/server.js';
import { startApi } from '../api/server.js';
import { startEvents } from '../services/events/server.js';
import { startAuth } from '../services/auth/server.js';
import { startProvisionedConsumer } from '../services/events/consumers/provisioned.js';
import { startDispatcher } from '../services/webhooks/dispatcher.js';
import { startAgents } from '../services/agents/server.js';
import { startData } from '../services/data/server.js';
import {
  createWorker,
  ensureWorkerSchedules,
  installRuntimeLogger,
  startConfiguredMirror,
  startRevokedKeyAlerter,
} from '../worker/index.js';
import { watchFleet } from '../worker/fleet-metrics.js';
import { developmentErpInstaller, startPlatformErpStandIn } from './erp-stand-in.js';
import { startSmtpSink } from '../sandbox/smtp/sink.js';
import { startBankStandIn } from '../sandbox/bank/server.js';
import { startChatStandIn } from '../sandbox/chat/server.js';
import { startLlmStandIn } from '../sandbox/llm/server.js';
import { ManagedProcess, waitForPort } from './managed-process.js';
import { prepareDemoErp, seedDemo } from './seed.js';
import { ensureDevOdoo } from './dev-odoo.js';
import type { DevShutdown } from './dev-shutdown.js';

/** Migrations, every caller → target pair's service key, the demo data; returns the demo login's password. */
export async function prepareDatabase(cfg: Config, dataDir: string, step: (msg: string) => void): Promise<string> {
  const pool = createPool(cfg.DATABASE_URL, 2);
  try {
    await migrate(pool);
    // first start: every platform caller → target pair gets its service key (registry + local secret store)
    const newKeys = await ensureServiceKeys(pool, new PgSecretStore(pool, cfg.SECRETS_KEY));
    if (newKeys.length)
      step(`service keys created: ${newKeys.map((k) => `${k.caller}→${k.target} ${k.keyId}`).join(', ')}`);
    const adminPassword = devAdminPassword(cfg, dataDir);
    await seedDemo(pool, { adminPassword });
    return adminPassword;
  } finally {
    await pool.end();
  }
}

/** DEV_ADMIN_PASSWORD, or the one made on the first start (kept in DATA_DIR, readable by its owner only). */
function devAdminPassword(cfg: Config, dataDir: string): string {
  if (cfg.DEV_ADMIN_PASSWORD) return cfg.DEV_ADMIN_PASSWORD;
  const file = path.join(dataDir, 'dev-admin-password');
  const password = existsSync(file) ? readFileSync(file, 'utf8').trim() : randomBytes(12).toString('base64url');
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}

/**
 * The ERP: the stand-in, or with ERP_BACKEND=odoo the tenant ingress in front of a real Odoo 18 at
 * ODOO_UPSTREAM_URL (odoo-bin --db-filter=^%h$ on ERP_DATABASE_URL's server). The demo tenant's
 * provisioning clones its template and makes its automation rules (invoice.posted, payment.received,
 * stock.changed → the event ingestion).
 */
export async function startDevErp(cfg: Config, shutdown: DevShutdown, step: (msg: string) => void) {
  if (cfg.ERP_BACKEND === 'odoo') {
    const odoo = await ensureDevOdoo(cfg, { odooSrc: process.env.ODOO_SRC, tier: 'starter', log: step });
    if (odoo) shutdown.add('Odoo', odoo);
    // in front of the Odoo at ODOO_UPSTREAM_URL: /svc/saas here, the rest to Odoo
    return shutdown.add('tenant ingress', await startTenantIngress(cfg));
  }
  await prepareDemoErp(cfg);
  // /svc/saas/… on every tenant host answers from the account API (erp → account-api key from the secret store)
  const standIn = await startPlatformErpStandIn(cfg);
  return shutdown.add('ERP stand-in', standIn);
}

/** The services and the stand-ins of the outside peers (mail, chat, bank, model); returns what the banner names. */
export async function startDevServices(cfg: Config, kubeconfigPath: string, dataDir: string, shutdown: DevShutdown) {
  const mailDir = path.join(dataDir, 'mail');
  shutdown.add('SMTP sink', await startSmtpSink({ host: cfg.SMTP_HOST, port: cfg.SMTP_PORT, dir: mailDir }));
  shutdown.add('notifications service', await startNotifications(cfg));
  // billing writes a tier change to the TenantClient on the Kubernetes API
  shutdown.add('account API', await startApi({ ...cfg, KUBECONFIG: kubeconfigPath }));
  // the auth service (§4.5): login and refresh for internal services, on the account API's sessions
  shutdown.add('auth service', await startAuth(cfg));
  // the events service, the consumer of client.provisioned, and the support chat stand-in (Mattermost API v4)
  shutdown.add('events service', await startEvents(cfg));
  shutdown.add('provisioned consumer', await startProvisionedConsumer(cfg));
  // the webhook dispatcher (consumer group `webhooks`): first attempts; retries run in the worker
  shutdown.add('webhook dispatcher', await startDispatcher(cfg));
  const chat = shutdown.add(
    'chat stand-in',
    await startChatStandIn({
      host: cfg.CHAT_HOST,
      port: cfg.CHAT_PORT,
      token: cfg.CHAT_TOKEN,
      teamId: cfg.CHAT_TEAM_ID,
      dir: path.join(dataDir, 'chat'),
    }),
  );
  // the banking service and the bank it reads locally (NextGenPSD2 stand-in, BANKING_BANKS points at it)
  const bank = shutdown.add(
    'bank stand-in',
    await startBankStandIn({ host: '127.0.0.1', port: cfg.BANK_SANDBOX_PORT, bankId: 'sandbox' }),
  );
  shutdown.add('banking service', await startBanking(cfg));
  // the agents (§4.4), the data service their tools read through, and the model stand-in (OpenAI Chat Completions)
  const llm = shutdown.add(
    'LLM stand-in',
    await startLlmStandIn({
      port: cfg.LLM_STANDIN_PORT,
      apiKey: cfg.LLM_KEY,
      chunkDelayMs: cfg.LLM_STANDIN_CHUNK_DELAY_MS,
    }),
  );
  shutdown.add('data service', await startData(cfg));
  shutdown.add('agents service', await startAgents(cfg));
  return { mailDir, chat, bank, llm };
}

/** `npm run dev`'s metrics server when METRICS_PORT is unset (the SDK's and the controller's on the next two ports). */
const DEV_METRICS_PORT = 9464;

/**
 * The worker, its schedules (backups' and the execution log's retention, the service keys' rotation),
 * the execution log's mirror to the log store, the controller, and the metrics: one server for the
 * services, the API and the worker of this process; the SDK's worker metrics and the controller (its
 * own process) on the next two ports (docs/operators.md, Metrics).
 */
export async function startDevWorkerAndController(
  cfg: Config,
  kubeconfigPath: string,
  dataDir: string,
  shutdown: DevShutdown,
) {
  const metricsPort = cfg.METRICS_PORT ?? DEV_METRICS_PORT;
  const metrics = shutdown.add(
    'metrics server',
    await startMetricsServer({ port: metricsPort, host: cfg.METRICS_HOST }),
  );
  const temporalMetrics = `${cfg.METRICS_HOST}:${cfg.TEMPORAL_METRICS_PORT ?? metricsPort + 1}`;
  const workerLog = createLogger({ name: 'worker' });
  installRuntimeLogger(workerLog, { temporalMetrics });
  const { worker, connection, closeDeps } = await createWorker(cfg, { erpInstaller: developmentErpInstaller(cfg) });
  const running = worker.run();
  const alerter = startRevokedKeyAlerter(cfg, workerLog);
  // the fleet's gauges (worker/fleet-metrics.ts) on this process's metrics, as the worker serves them
  const fleetPool = createPool(cfg.DATABASE_URL, 2);
  const unwatchFleet = watchFleet(fleetPool);
  // the execution log's mirror to the log store, as the worker process runs it
  const mirror = startConfiguredMirror(cfg, fleetPool, workerLog);
  shutdown.add('worker', {
    close: async () => {
      // the SDK stops the worker on SIGINT by itself (its runtime's shutdown signals)
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await mirror?.stop();
      unwatchFleet();
      await fleetPool.end();
      await alerter.stop();
      await connection.close();
      await closeDeps();
    },
  });
  const scheduler = await connectTemporal(cfg);
  await ensureWorkerSchedules(scheduler, cfg);
  await scheduler.connection.close();
  // the TenantClient controller, a process of its own (as in a cluster): TenantClients on the
  // Kubernetes API drive the tenant workflows
  const controller = startTenantControllerProcess(kubeconfigPath, dataDir, metricsPort + 2);
  shutdown.add('tenant controller', { close: () => controller.stop() });
  // it serves its metrics once it runs: one that exits at start (a configuration it refuses) stops `npm run dev`
  await waitForPort(metricsPort + 2, 60_000, controller);
  return { metricsUrl: metrics.url, temporalMetrics, controllerMetricsPort: metricsPort + 2 };
}

/** The TenantClient controller (services/tenant-controller) as a child process; its log beside the servers'. */
function startTenantControllerProcess(kubeconfigPath: string, dataDir: string, metricsPort: number) {
  process.env.KUBECONFIG = kubeconfigPath;
  process.env.METRICS_PORT = String(metricsPort);
  return new ManagedProcess(
    'tenant-controller',
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('../services/tenant-controller/index.ts', import.meta.url))],
    path.join(dataDir, 'tenant-controller.log'),
    path.join(dataDir, 'tenant-controller.pid'),
  );
}
