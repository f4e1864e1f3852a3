/**
 * The Temporal worker process: one task queue, every workflow of workflows/index.ts, every
 * activity of createActivities(deps). SDK logs go to pino; SIGINT/SIGTERM drain and stop. The ERP
 * installer (a tenant database from scratch) is the caller's choice: run directly, this file passes
 * real Odoo's (worker/erp-installer.ts); the development worker (scripts/worker.ts) and the tests
 * pass the ERP stand-in's.
 */
import { fileURLToPath } from 'node:url';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type LogLevel,
  type WorkerOptions,
} from '@temporalio/worker';
import { config as loadConfig, type Config } from '../lib/config.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { createActivities } from '../activities/index.js';
import { connectPlatformDeps, WORKER_CALLER } from '../activities/deps.js';
import { serviceKeyFor } from '../domain/service-keys/secret-store.js';
import { ensureBackupDrillSchedules, ensureBackupRetentionSchedule } from '../domain/tenants/backup-schedules.js';
import { ensureExecutionLogRetentionSchedule } from '../domain/access/execution-log-schedule.js';
import { ensureWebhookRetentionSchedule } from '../domain/webhooks/retention.js';
import { ensureErpEventSweepSchedule } from '../domain/erp-events/sweep.js';
import { ensureRotationSchedules } from '../domain/service-keys/schedules.js';
import { startMisuseAlerter } from '../domain/service-keys/misuse.js';
import { createSecretStore } from '../domain/service-keys/secret-store-factory.js';
import { createPool } from '../lib/db.js';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { connectTemporal } from '../lib/temporal.js';
import { ensureSearchAttributes } from './search-attributes.js';
import { erpInstallerFor } from './erp-installer.js';
import type { ErpInstaller } from '../domain/erp/from-scratch.js';
import { activityMetrics } from './activity-metrics.js';
import { watchFleet } from './fleet-metrics.js';
import { startExecutionLogMirror } from '../domain/access/execution-log-mirror.js';
import { heartbeatsWhileRunning } from './activity-heartbeats.js';
import { startConfiguredMetricsServer } from '../lib/metrics.js';
import { startTracing } from '../lib/tracing.js';
import { activityTracing, workflowInterceptorModules, workflowSpanSinks } from './tracing.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Routes the SDK's and the worker's logs into pino, and serves the SDK's worker metrics (task slots,
 * poll and schedule-to-start latencies, …) for Prometheus at `temporalMetrics` (host:port) when
 * given (call once per process, before any worker).
 */
export function installRuntimeLogger(logger: Logger, { temporalMetrics }: { temporalMetrics?: string } = {}) {
  const level = (process.env.TEMPORAL_LOG_LEVEL ?? 'INFO') as LogLevel;
  Runtime.install({
    ...(temporalMetrics
      ? {
          telemetryOptions: { metrics: { prometheus: { bindAddress: temporalMetrics, useSecondsForDurations: true } } },
        }
      : {}),
    logger: new DefaultLogger(level, ({ level: l, message, meta }) => {
      const method =
        l === 'TRACE' ? 'trace' : l === 'DEBUG' ? 'debug' : l === 'WARN' ? 'warn' : l === 'ERROR' ? 'error' : 'info';
      logger[method]({ ...meta, component: 'temporal' }, message);
    }),
  });
}

/** Where the SDK serves its worker metrics: METRICS_HOST:TEMPORAL_METRICS_PORT (none when unset). */
export function temporalMetricsAddress(config: Config): string | undefined {
  return config.TEMPORAL_METRICS_PORT === undefined
    ? undefined
    : `${config.METRICS_HOST}:${config.TEMPORAL_METRICS_PORT}`;
}

export interface CreateWorkerOptions extends Partial<Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>> {
  /** What installs a tenant database whose template is missing; none: such an install fails as unavailable. */
  erpInstaller?: ErpInstaller;
}

/** How long a stopping worker lets running activities finish before it cancels them (the pod's grace period covers it). */
export const WORKER_SHUTDOWN_GRACE_MS = 10_000;

export async function createWorker(
  config: Config,
  options: CreateWorkerOptions = {},
): Promise<{ worker: Worker; connection: NativeConnection; closeDeps: () => Promise<void> }> {
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  // pools on the platform and ERP databases, a Temporal client (schedules), the chat client, the route driver
  const tenant = { ...(await connectPlatformDeps(config)), erpInstaller: options.erpInstaller };
  const activities = createActivities({
    notificationsUrl: config.NOTIFICATIONS_URL,
    notificationsKey: serviceKeyFor(tenant.secrets, WORKER_CALLER, 'notifications'),
    tenant,
  });
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath: options.workflowsPath ?? workflowsPath }),
    // each activity attempt's queue wait and run time (the provisioning steps') in the metrics; and
    // heartbeats for the quick steps, so one on a worker that died is retried within seconds
    interceptors: {
      activity: [activityMetrics, heartbeatsWhileRunning, ...activityTracing()],
      // bundled already when the caller passes a bundle (test/global-setup.ts)
      ...(options.workflowBundle ? {} : { workflowModules: workflowInterceptorModules }),
    },
    sinks: workflowSpanSinks(),
    shutdownGraceTime: WORKER_SHUTDOWN_GRACE_MS,
    // a long activity's heartbeat details (a from-scratch install's progress) reach the server, and
    // so the Temporal UI's pending activity, within seconds rather than at 80% of its heartbeat timeout
    maxHeartbeatThrottleInterval: '2 seconds',
  });
  return { worker, connection, closeDeps: () => tenant.close() };
}

/**
 * The revoked-key alerter (domain/service-keys/misuse.ts): mails the operators and publishes a
 * `service-key.revoked-key-used` event for each revoked key a target saw. Started by the worker
 * process and `npm run dev` (not by createWorker: tests start their own where they need one).
 */
export function startRevokedKeyAlerter(config: Config, log: Logger): { stop(): Promise<void> } {
  const pool = createPool(config.DATABASE_URL, 2);
  const alerter = startMisuseAlerter({
    pool,
    secrets: createSecretStore(config, pool),
    caller: WORKER_CALLER,
    notificationsUrl: config.NOTIFICATIONS_URL,
    eventsUrl: config.EVENTS_URL,
    to: config.OPS_ALERT_EMAIL,
    intervalMs: config.SERVICE_KEY_MISUSE_ALERT_INTERVAL_MS,
    pollMs: config.SERVICE_KEY_MISUSE_POLL_MS,
    log,
  });
  return {
    async stop() {
      await alerter.stop();
      await pool.end();
    },
  };
}

/** The platform's Temporal Schedules, ensured at every start (idempotent): backups, backup drills, execution log, webhook history, service keys. */
export async function ensureWorkerSchedules(client: Client, config: Config) {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  // the daily job that deletes backups past their tier's retention
  await ensureBackupRetentionSchedule(client, { taskQueue });
  // the weekly backup drills, one per tier
  await ensureBackupDrillSchedules(client, { taskQueue, everyMs: config.BACKUP_DRILL_INTERVAL });
  // the daily job that drops execution-log partitions past 90 days
  await ensureExecutionLogRetentionSchedule(client, { taskQueue, retentionDays: config.EXECUTION_LOG_RETENTION_DAYS });
  // the daily job that deletes webhook history past WEBHOOK_RETENTION_DAYS
  await ensureWebhookRetentionSchedule(client, { taskQueue, retentionDays: config.WEBHOOK_RETENTION_DAYS });
  // the catch-up of ERP events the tenant ERPs posted but the platform missed
  await ensureErpEventSweepSchedule(client, { taskQueue, everyMs: config.ERP_EVENTS_SWEEP_INTERVAL });
  // the annual rotation of every live service-key pair
  await ensureRotationSchedules(client, { taskQueue, everyDays: config.SERVICE_KEY_ROTATION_EVERY_DAYS });
}

/**
 * The execution log's mirror from PostgreSQL to the log store (domain/access/execution-log-mirror.ts)
 * when LOG_STORE_URL is set: run by the worker process and `npm run dev`; replicas share one cursor.
 */
export function startConfiguredMirror(config: Config, pool: pg.Pool, log: Logger) {
  if (!config.LOG_STORE_URL) return undefined;
  return startExecutionLogMirror({
    pool,
    storeUrl: config.LOG_STORE_URL,
    intervalMs: config.LOG_STORE_MIRROR_INTERVAL_MS,
    log,
  });
}

/** The worker process: schedules ensured, then the worker until SIGINT/SIGTERM, with `erpInstaller`. */
export async function runWorkerProcess(config: Config, erpInstaller: ErpInstaller | undefined): Promise<void> {
  const logger = createLogger({ name: 'worker' });
  installRuntimeLogger(logger, { temporalMetrics: temporalMetricsAddress(config) });
  const metrics = await startConfiguredMetricsServer(config);
  const client = await connectTemporal(config);
  const added = await ensureSearchAttributes(client, config.TEMPORAL_NAMESPACE);
  if (added.length) logger.info({ added }, 'registered search attributes');
  await ensureWorkerSchedules(client, config);
  await client.connection.close();
  const { worker, connection, closeDeps } = await createWorker(config, { erpInstaller });
  const alerter = startRevokedKeyAlerter(config, logger);
  const fleetPool = createPool(config.DATABASE_URL, 2);
  const unwatchFleet = watchFleet(fleetPool);
  const mirror = startConfiguredMirror(config, fleetPool, logger);
  // Worker.run() handles SIGINT/SIGTERM itself: it stops polling, lets running tasks finish, then resolves.
  await worker.run();
  await mirror?.stop();
  unwatchFleet();
  await fleetPool.end();
  await alerter.stop();
  await connection.close();
  await closeDeps();
  await metrics?.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const config = loadConfig();
  startTracing('worker', config);
  await runWorkerProcess(config, erpInstallerFor(config));
}
