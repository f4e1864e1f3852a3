/**
 * `npm run dev`: the whole platform on this machine. Starts PostgreSQL, Redis and the Temporal
 * dev server (with its Web UI) as private servers under DATA_DIR, applies migrations, seeds the
 * demo data, runs the SMTP sink, the notifications service, the account API and the worker, and
 * prints where everything is. Ctrl-C stops all of it.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { config as loadConfig } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';
import { ensureServiceKeys } from '../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { createLogger } from '../lib/logger.js';
import { startPostgres, startRedis, startServersInOwnProcessGroups, startTemporal, stopAll } from './local-servers.js';
import { seedDemo, seedDemoErp, DEMO } from './seed.js';
import { startErpStandIn } from '../sandbox/erp/server.js';
import { startSmtpSink } from '../sandbox/smtp/sink.js';
import { startNotifications } from '../services/notifications/server.js';
import { startApi } from '../api/server.js';
import { startEvents } from '../services/events/server.js';
import { startProvisionedConsumer } from '../services/events/consumers/provisioned.js';
import { startChatStandIn } from '../sandbox/chat/server.js';
import { createWorker, installRuntimeLogger } from '../worker/index.js';
import { ensureBackupRetentionSchedule } from '../domain/tenants/backup-schedules.js';
import { ensureExecutionLogRetentionSchedule } from '../domain/access/execution-log-schedule.js';
import { connectTemporal } from '../lib/temporal.js';

const started = Date.now();
const cfg = loadConfig();
const dataDir = path.resolve(cfg.DATA_DIR);
mkdirSync(dataDir, { recursive: true });
// PostgreSQL runs as the `postgres` user when we are root, and must reach its folder inside this one
chmodSync(dataDir, 0o755);
const step = (msg: string) => console.log(`\x1b[36m▸\x1b[0m ${msg}`);
const portOf = (u: string) => Number(new URL(u).port);

/** What to stop on the way out, in reverse start order; each gets CLOSE_TIMEOUT_MS, then we move on. */
const closers: { name: string; close: () => Promise<unknown> }[] = [];
const CLOSE_TIMEOUT_MS = 15_000;
let stopping = false;
async function shutdown(code = 0) {
  if (stopping) return;
  stopping = true;
  console.log('\nStopping the platform…');
  for (const { name, close } of closers.reverse()) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        console.error(`${name} did not stop within ${CLOSE_TIMEOUT_MS / 1000} s; going on`);
        resolve();
      }, CLOSE_TIMEOUT_MS);
    });
    await Promise.race([close().catch((err) => console.error(`${name}: ${String(err)}`)), timeout]);
    clearTimeout(timer);
  }
  await stopAll();
  console.log('Stopped.');
  process.exit(code);
}
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());

startServersInOwnProcessGroups();
try {
  step(`starting PostgreSQL, Redis and the Temporal dev server (data in ${dataDir})`);
  const temporalPort = Number(cfg.TEMPORAL_ADDRESS.split(':').pop());
  const db = new URL(cfg.DATABASE_URL);
  await Promise.all([
    startPostgres({
      dir: path.join(dataDir, 'postgres'),
      port: portOf(cfg.DATABASE_URL),
      user: decodeURIComponent(db.username),
      password: decodeURIComponent(db.password),
      database: db.pathname.slice(1),
    }),
    startRedis({ dir: path.join(dataDir, 'redis'), port: portOf(cfg.REDIS_URL), persistent: true }),
    startTemporal({ dir: path.join(dataDir, 'temporal'), port: temporalPort, uiPort: portOf(cfg.TEMPORAL_UI_URL), persistent: true }),
  ]);

  step('applying migrations and seeding demo data');
  const pool = createPool(cfg.DATABASE_URL, 2);
  await migrate(pool);
  // first start: every platform caller → target pair gets its service key (registry + local secret store)
  const newKeys = await ensureServiceKeys(pool, new PgSecretStore(pool, cfg.SECRETS_KEY));
  if (newKeys.length) step(`service keys created: ${newKeys.map((k) => `${k.caller}→${k.target} ${k.keyId}`).join(', ')}`);
  const passwordFile = path.join(dataDir, 'dev-admin-password');
  const adminPassword =
    cfg.DEV_ADMIN_PASSWORD ?? (existsSync(passwordFile) ? readFileSync(passwordFile, 'utf8').trim() : randomBytes(12).toString('base64url'));
  if (!cfg.DEV_ADMIN_PASSWORD) writeFileSync(passwordFile, adminPassword, { mode: 0o600 });
  await seedDemo(pool, { adminPassword });
  const demoErp = await seedDemoErp(pool, cfg); // templates, the demo tenant's database, route and API user
  await pool.end();

  step('starting the SMTP sink, the notifications service, the account API and the worker');
  const mailDir = path.join(dataDir, 'mail');
  const sink = await startSmtpSink({ host: cfg.SMTP_HOST, port: cfg.SMTP_PORT, dir: mailDir });
  closers.push({ name: 'SMTP sink', close: () => sink.close() });
  const notifications = await startNotifications(cfg);
  closers.push({ name: 'notifications service', close: () => notifications.close() });
  const api = await startApi(cfg);
  closers.push({ name: 'account API', close: () => api.close() });
  const erp = await startErpStandIn({ host: cfg.ERP_HOST, port: cfg.ERP_PORT, platformDatabaseUrl: cfg.DATABASE_URL, erpDatabaseUrl: cfg.ERP_DATABASE_URL });
  closers.push({ name: 'ERP stand-in', close: () => erp.close() });
  // the events service, the consumer of client.provisioned, and the support chat stand-in (Mattermost API v4)
  const events = await startEvents(cfg);
  closers.push({ name: 'events service', close: () => events.close() });
  const provisioned = await startProvisionedConsumer(cfg);
  closers.push({ name: 'provisioned consumer', close: () => provisioned.close() });
  const chat = await startChatStandIn({
    host: cfg.CHAT_HOST,
    port: cfg.CHAT_PORT,
    token: cfg.CHAT_TOKEN,
    teamId: cfg.CHAT_TEAM_ID,
    dir: path.join(dataDir, 'chat'),
  });
  closers.push({ name: 'chat stand-in', close: () => chat.close() });
  installRuntimeLogger(createLogger({ name: 'worker' }));
  const { worker, connection, closeDeps } = await createWorker(cfg);
  const running = worker.run();
  closers.push({
    name: 'worker',
    close: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await closeDeps();
    },
  });
  // the daily job that deletes tenant backups past their tier's retention
  const scheduler = await connectTemporal(cfg);
  await ensureBackupRetentionSchedule(scheduler, { taskQueue: cfg.TEMPORAL_TASK_QUEUE });
  // the daily job that drops execution-log partitions past 90 days
  await ensureExecutionLogRetentionSchedule(scheduler, { taskQueue: cfg.TEMPORAL_TASK_QUEUE, retentionDays: cfg.EXECUTION_LOG_RETENTION_DAYS });
  await scheduler.connection.close();

  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`
\x1b[32m✔ The platform is up\x1b[0m (ready in ${secs} s)

  Account API     ${cfg.API_PUBLIC_URL}            (probes: /healthz, /readyz)
  API docs        ${cfg.API_PUBLIC_URL}/docs
  Temporal UI     ${cfg.TEMPORAL_UI_URL}
  Notifications   ${cfg.NOTIFICATIONS_URL}
  Tenant ERP      ${erp.url}            (Odoo XML-RPC stand-in; demo tenant ${demoErp.host}, database ${demoErp.database})
  Events          ${cfg.EVENTS_URL}            (stream "${cfg.EVENTS_STREAM}"; GET /api/v1/events/info with X-API-Key)
  Support chat    ${chat.url}            (Mattermost API v4 stand-in, team ${chat.teamId}; rooms in ${path.join(dataDir, 'chat')})
  Mail (SMTP sink) 127.0.0.1:${cfg.SMTP_PORT}, messages land in ${mailDir}
  Demo login      ${DEMO.adminEmail} / ${adminPassword}${cfg.DEV_ADMIN_PASSWORD ? ' (from DEV_ADMIN_PASSWORD)' : ''}

Next steps (in another terminal):
  npm run cli -- resend-welcome ${DEMO.tenant}      # support: send the demo welcome e-mail again
  npm run cli -- apply -f examples/tenant-acme.yaml && npm run cli -- get tenants   # provision a tenant
  npm run cli -- describe tenant acme                # its conditions, resources, steps, Temporal UI link
  npm run cli -- service-keys                        # caller → target pairs, key ids, states, last use
  curl -s ${cfg.API_PUBLIC_URL}/readyz
  curl -s -H 'Host: ${demoErp.host}' ${erp.url}/web/health      # the demo tenant's ERP health probe
  ls ${mailDir.startsWith(process.cwd()) ? path.relative(process.cwd(), mailDir) : mailDir}    # the e-mails that went out

Ctrl-C stops everything.
`);
} catch (err) {
  console.error(`\x1b[31m✘ npm run dev failed:\x1b[0m ${(err as Error).message}`);
  await shutdown(1);
}
