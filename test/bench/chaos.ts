/**
 * `npm run bench:chaos`: everything at once while platform processes die. Private PostgreSQL, Redis,
 * Temporal dev server and Kubernetes API server; the worker, the account API, the webhook
 * dispatcher, the events service and the TenantClient controller each as its own process (the mail
 * sink, notifications, ERP and chat stand-ins and the provisioned consumer in this one). While
 * BENCH_CHAOS_TENANTS (50) TenantClients provision, BENCH_CHAOS_EVENTS (5,000) webhook events are
 * delivered (1 in 100 first attempts answered 500), a service-key rotation runs and dashboards are
 * read, one of the five processes chosen at random (each kind once in every five kills) is killed with
 * SIGKILL every BENCH_CHAOS_KILL_EVERY (10 s) for BENCH_CHAOS_DURATION (3 min) and restarted at once. Then it waits (at most
 * BENCH_CHAOS_RECOVERY_WAIT, 10 min) for every tenant Ready, every message delivered and the
 * rotation done, and prints: tenants Ready, failed workflows, welcome e-mails per owner, webhook
 * messages never delivered and delivered more than once, dashboard reads answered 5xx, the time to
 * recover. Asserts nothing.
 */
import path from 'node:path';
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { parseConfig, type Config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { duration } from '../../lib/setting-kinds.js';
import { connectTemporal } from '../../lib/temporal.js';
import { createApiKey } from '../../domain/access/api-keys.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { startErpStandIn } from '../../sandbox/erp/server.js';
import { startChatStandIn } from '../../sandbox/chat/server.js';
import { readMailbox, startSmtpSink } from '../../sandbox/smtp/sink.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { installTenantClientCrd } from '../../scripts/tenant-client-crd.js';
import { startProvisionedConsumer } from '../../services/events/consumers/provisioned.js';
import { startNotifications } from '../../services/notifications/server.js';
import { killAtRandom, PlatformProcesses } from './chaos/processes.js';
import { DashboardLoad, startRotation, TenantLoad, WebhookLoad } from './chaos/workloads.js';
import { ownerOf } from './tenant-clients.js';

const TENANTS = Number(process.env.BENCH_CHAOS_TENANTS ?? 50);
const EVENTS = Number(process.env.BENCH_CHAOS_EVENTS ?? 5000);
const FAILING_EVERY = 100;
const CHAOS_MS = duration.parse(process.env.BENCH_CHAOS_DURATION ?? '3m');
const KILL_EVERY_MS = duration.parse(process.env.BENCH_CHAOS_KILL_EVERY ?? '10s');
const RECOVERY_WAIT_MS = duration.parse(process.env.BENCH_CHAOS_RECOVERY_WAIT ?? '10m');
/** The pair rotated during the run: the worker (killed at random) holds its key. */
const ROTATED = { caller: 'worker', target: 'notifications' };

const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = throwAwayDir('plana-bench-chaos-');
const closers: (() => Promise<unknown>)[] = [];
const API_URL = { value: '' };

/** The servers, the schema, the service keys, the template, and the parts that are not killed. */
async function startStack() {
  step('starting PostgreSQL, Redis, Temporal and the Kubernetes API server');
  const { pg, redis, temporal, kube } = await startThrowAwayServers(dir);
  await installTenantClientCrd(kube.kubeconfigPath);
  const env = await processEnv({ pg, redis, temporal, kubeconfigPath: kube.kubeconfigPath });
  const cfg = parseConfig(env);
  const pool = createPool(cfg.DATABASE_URL, 4);
  closers.push(() => pool.end());
  await migrate(pool);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  await ensureErpTemplates(cfg.ERP_DATABASE_URL, { tiers: ['starter'], versions: ['18'] });
  step('starting the mail sink, notifications, the ERP and chat stand-ins and the provisioned consumer');
  const mailDir = path.join(dir, 'mail');
  for (const part of [
    await startSmtpSink({ port: cfg.SMTP_PORT, dir: mailDir }),
    await startNotifications(cfg),
    await startErpStandIn({
      host: '127.0.0.1',
      port: cfg.ERP_PORT,
      platformDatabaseUrl: cfg.DATABASE_URL,
      erpDatabaseUrl: cfg.ERP_DATABASE_URL,
      logger: createLogger({ level: 'silent' }),
    }),
    await startChatStandIn({ host: '127.0.0.1', port: cfg.CHAT_PORT, token: cfg.CHAT_TOKEN, teamId: cfg.CHAT_TEAM_ID }),
    await startProvisionedConsumer(cfg),
  ])
    closers.push(() => part.close());
  return { env, cfg, pool, secrets, mailDir, kubeconfigPath: kube.kubeconfigPath };
}

/** The environment of every process: the private servers, free ports, fast probes and retries. */
async function processEnv(s: {
  pg: { url: string; urlFor(db: string): string };
  redis: { url: string };
  temporal: { address: string };
  kubeconfigPath: string;
}): Promise<Record<string, string>> {
  const [api, notifications, smtp, events, erp, chat] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const local = (port: number) => `http://127.0.0.1:${port}`;
  return {
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    LOG_LEVEL: 'error',
    TEMPORAL_LOG_LEVEL: 'WARN',
    DATA_DIR: dir,
    DATABASE_URL: s.pg.url,
    ERP_DATABASE_URL: s.pg.urlFor('postgres'),
    REDIS_URL: s.redis.url,
    TEMPORAL_ADDRESS: s.temporal.address,
    TEMPORAL_TASK_QUEUE: 'chaos',
    ...{ API_PORT: String(api), API_PUBLIC_URL: local(api!), ACCOUNT_API_URL: local(api!) },
    ...{ NOTIFICATIONS_PORT: String(notifications), NOTIFICATIONS_URL: local(notifications!) },
    ...{ EVENTS_PORT: String(events), EVENTS_URL: local(events!), SMTP_PORT: String(smtp) },
    ...{ ERP_PORT: String(erp), ERP_URL: local(erp!), CHAT_PORT: String(chat), CHAT_URL: local(chat!) },
    FILESTORE_ROOT: path.join(dir, 'filestore'),
    BACKUP_ROOT: path.join(dir, 'backups'),
    KUBECONFIG: s.kubeconfigPath,
    KUBERNETES_NAMESPACE: 'default',
    TENANT_CONTROLLER_RESYNC: '2s',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWED_ADDRESSES: '127.0.0.1/32',
    WEBHOOK_RETRY_SCHEDULE: process.env.WEBHOOK_RETRY_SCHEDULE ?? '5s,30s,2m,5m',
    SERVICE_KEY_ROTATION_QUIET_MS: '3000',
  };
}

async function waitUntilServing(cfg: Config, temporal: Client): Promise<void> {
  const answers = (url: string) =>
    fetch(url).then(
      (r) => r.ok,
      () => false,
    );
  for (;;) {
    const polled = await temporal.connection.workflowService
      .describeTaskQueue({ namespace: cfg.TEMPORAL_NAMESPACE, taskQueue: { name: cfg.TEMPORAL_TASK_QUEUE } })
      .then(
        (d) => (d.pollers?.length ?? 0) > 0,
        () => false,
      );
    if (polled && (await answers(`${cfg.API_PUBLIC_URL}/healthz`)) && (await answers(`${cfg.EVENTS_URL}/healthz`)))
      return;
    await sleep(300);
  }
}

/** A `dashboard:read` key of the tenant's workspace, or undefined while its workspace entry does not exist yet. */
async function dashboardKey(pool: ReturnType<typeof createPool>, tenant: string) {
  const { rows } = await pool.query<{ id: string; slug: string; owner: string }>(
    `SELECT w.id, w.slug, u.id AS owner FROM tenants t JOIN workspaces w ON w.id = t.workspace_id
       JOIN users u ON u.email = $2 WHERE t.name = $1`,
    [tenant, ownerOf(tenant)],
  );
  if (!rows[0]) return undefined;
  const { id, slug, owner } = rows[0];
  const key = await createApiKey(pool, {
    workspaceId: id,
    name: 'chaos',
    scopes: ['dashboard:read'],
    createdBy: owner,
    bcryptCost: 4,
  });
  return { url: `${API_URL.value}/api/portal/odoo/${slug}/kpis`, token: key.token };
}

/** What the unrecovered workflows wait for: their pending activities, attempts and last failures (at most 5 workflows). */
async function explainWaits(temporal: Client, workflowIds: string[]): Promise<void> {
  for (const id of workflowIds.slice(0, 5)) {
    const d = await temporal.workflow.getHandle(id).describe();
    if (d.status.name !== 'RUNNING') continue;
    const pending = (d.raw.pendingActivities ?? []).map(
      (a) =>
        `${a.activityType?.name} attempt ${a.attempt}${a.lastFailure?.message ? ` (last failure: ${a.lastFailure.message.slice(0, 120)})` : ''}`,
    );
    console.log(
      `  still waiting: ${id}: ${pending.length ? pending.join('; ') : 'no activity pending (a timer or a signal)'}`,
    );
  }
}

async function workflowsEndedBadly(temporal: Client): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const status of ['Failed', 'TimedOut', 'Terminated'])
    counts[status] = (await temporal.workflow.count(`ExecutionStatus="${status}"`)).count;
  return counts;
}

async function rotationDone(temporal: Client, workflowId: string): Promise<boolean> {
  const { status } = await temporal.workflow.getHandle(workflowId).describe();
  return status.name !== 'RUNNING';
}

/** Polls each condition until it holds (or RECOVERY_WAIT_MS passes); returns when each first held, in ms after `since`. */
async function waitForRecovery(
  since: number,
  conditions: Record<string, () => Promise<boolean>>,
  explain: () => Promise<void>,
) {
  let explained = Date.now();
  const heldAfter: Record<string, number | undefined> = Object.fromEntries(
    Object.keys(conditions).map((k) => [k, undefined]),
  );
  while (Date.now() - since < RECOVERY_WAIT_MS && Object.values(heldAfter).includes(undefined)) {
    for (const [what, holds] of Object.entries(conditions))
      if (heldAfter[what] === undefined && (await holds())) heldAfter[what] = Math.max(0, Date.now() - since);
    if (Date.now() - explained > 30_000) {
      explained = Date.now();
      await explain().catch((err) => console.log(`  (could not say what it waits for: ${String(err)})`));
    }
    await sleep(500);
  }
  return heldAfter;
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

try {
  const { env, cfg, pool, secrets, mailDir, kubeconfigPath } = await startStack();
  API_URL.value = cfg.API_PUBLIC_URL;
  const processes = new PlatformProcesses(env);
  closers.push(() => processes.stopAll());
  step('starting the worker, the account API, the dispatcher, the events service and the controller (own processes)');
  processes.startAll();
  const temporal = await connectTemporal(cfg);
  closers.push(() => temporal.connection.close());
  await waitUntilServing(cfg, temporal);

  const names = Array.from({ length: TENANTS }, (_, i) => `chaos-${String(i).padStart(3, '0')}`);
  const tenants = new TenantLoad(kubeconfigPath, names);
  const webhooks = await WebhookLoad.start(pool, cfg.SECRETS_KEY, FAILING_EVERY);
  closers.push(async () => webhooks.close());
  const eventsKey = (await secrets.current('worker', 'events')).key;
  const operatorKey = (await secrets.current('operator', 'account-api')).key;
  await sleep(1_500); // the dispatcher's endpoint cache

  const chaosEnds = Date.now() + CHAOS_MS;
  step(
    `chaos for ${CHAOS_MS / 1000} s: ${TENANTS} tenants, ${EVENTS} events (1 in ${FAILING_EVERY} failing first), ` +
      `rotation ${ROTATED.caller} → ${ROTATED.target}, dashboard reads; SIGKILL every ${KILL_EVERY_MS / 1000} s`,
  );
  const killing = killAtRandom(processes, KILL_EVERY_MS, chaosEnds);
  await tenants.applyAll();
  const producing = webhooks.produce(cfg.EVENTS_URL, eventsKey, EVENTS, CHAOS_MS * 0.8);
  const rotationId = await startRotation(cfg.API_PUBLIC_URL, operatorKey, ROTATED.caller, ROTATED.target);
  const dashboards = new DashboardLoad();
  const reading = dashboards.run(() => dashboardKey(pool, names[0]!), 250);
  await killing;
  const lastKill = Date.now();
  step(`${processes.kills.length} kills; waiting for the recovery (at most ${RECOVERY_WAIT_MS / 1000} s)`);
  await producing;

  const recovery = await waitForRecovery(
    lastKill,
    {
      'tenants Ready': async () => (await tenants.poll().catch(() => 0)) === TENANTS,
      'messages delivered': async () => webhooks.deliveries.size === EVENTS,
      'rotation ended': () => rotationDone(temporal, rotationId),
    },
    () =>
      explainWaits(temporal, [
        ...names.filter((n) => !tenants.readyAfter.has(n)).map((n) => tenantWorkflowId(n)),
        rotationId,
      ]),
  );
  dashboards.stop();
  await reading;

  const welcomes = new Map(names.map((n) => [ownerOf(n), 0]));
  for (const mail of readMailbox(mailDir))
    if (mail.subject.startsWith('Welcome to Plana'))
      for (const to of mail.to) if (welcomes.has(to)) welcomes.set(to, welcomes.get(to)! + 1);
  const welcomeCounts = [...welcomes.values()];
  const twice = [...webhooks.deliveries.values()].filter((n) => n > 1).length;
  const killsBy = processes.kills.reduce<Record<string, number>>(
    (acc, k) => ({ ...acc, [k.victim]: (acc[k.victim] ?? 0) + 1 }),
    {},
  );
  const ended = await workflowsEndedBadly(temporal);
  const rotation = (await temporal.workflow.getHandle(rotationId).describe()).status.name;
  const { answers } = dashboards;
  console.log(`
npm run bench:chaos (load average ${loadAverage()}; the goals in brackets)
  kills (SIGKILL, restarted at once)  ${processes.kills.length}: ${Object.entries(killsBy)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}
  tenants Ready                       ${tenants.readyAfter.size} of ${TENANTS} [100 %]
  workflows failed / timed out / terminated  ${ended.Failed} / ${ended.TimedOut} / ${ended.Terminated} [0]
  welcome e-mails per owner           exactly 1: ${welcomeCounts.filter((n) => n === 1).length}, none: ${welcomeCounts.filter((n) => n === 0).length}, more: ${welcomeCounts.filter((n) => n > 1).length} [exactly 1 each]
  webhook messages                    ${webhooks.deliveries.size} of ${EVENTS} delivered, ${EVENTS - webhooks.deliveries.size} never [0], ${twice} more than once; ${webhooks.failedFirst} first attempts failed on purpose, ${webhooks.verifyFailures} failed verification; ${webhooks.postRetries.n} event posts retried while the events service was down
  service-key rotation                ${ROTATED.caller} → ${ROTATED.target}: ${rotation}
  dashboard reads                     ${answers.ok} ok, ${answers.serverErrors} answered 5xx, ${answers.clientErrors} 4xx, ${answers.refused} refused (API down)
  recovered, after the last kill      ${Object.entries(recovery)
    .map(
      ([what, ms]) =>
        `${what} ${ms === undefined ? `NOT within ${RECOVERY_WAIT_MS / 1000} s` : `${(ms / 1000).toFixed(1)} s`}`,
    )
    .join(', ')}
`);
} catch (err) {
  console.error('bench:chaos failed:', err);
  process.exitCode = 1;
} finally {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await stopAll();
}
