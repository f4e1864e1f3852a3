/**
 * `npm run bench:provision`: how fast a TenantClient applied to the Kubernetes API becomes a Ready
 * tenant. Starts its own PostgreSQL, Redis, Temporal dev server and Kubernetes API server (etcd +
 * kube-apiserver, with the TenantClient CRD) in a throw-away folder, the events service with its
 * consumer, the notifications service with the SMTP sink, the ERP and chat stand-ins and the
 * account API in this process, and the worker and the TenantClient controller as processes of
 * their own (so their memory and CPU time are their own). Then:
 *
 *   1. one tenant: time from its creation on the API server to Ready=True in its status there;
 *   2. BENCH_TENANTS (default 20) TenantClients created at once: total time until all are Ready,
 *      p50/p99 time to Ready, the CPU time of the API server, etcd, the controller and the worker
 *      per tenant, and the worker's resident memory (current and peak, from /proc).
 *
 * Prints the figures beside the anchors (ANCHORS.md: 200 at once, p99 50.9 s); asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startApi } from '../../api/server.js';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { migrate } from '../../lib/migrate.js';
import { startChatStandIn } from '../../sandbox/chat/server.js';
import { startErpStandIn } from '../../sandbox/erp/server.js';
import { startSmtpSink } from '../../sandbox/smtp/sink.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { createTenantClient, readyTenantClients, tenantClientsApi } from './tenant-clients.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { installTenantClientCrd } from '../../scripts/tenant-client-crd.js';
import { startProvisionedConsumer } from '../../services/events/consumers/provisioned.js';
import { startEvents } from '../../services/events/server.js';
import { startNotifications } from '../../services/notifications/server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const TENANTS = Number(process.env.BENCH_TENANTS ?? 20);
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

const dir = throwAwayDir('plana-bench-provision-');
let worker: ChildProcess | undefined;
let controller: ChildProcess | undefined;
const closers: (() => Promise<unknown>)[] = [];

function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(/(\d+)\s+kB/.exec(status.split('\n').find((l) => l.startsWith(field)) ?? '')?.[1] ?? 0);
  return { rssMb: kb('VmRSS:') / 1024, peakMb: kb('VmHWM:') / 1024 };
}

/** CPU time (user + system) a process has used so far, in seconds (/proc/<pid>/stat, 100 ticks a second). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

try {
  step('starting PostgreSQL, Redis, Temporal and the Kubernetes API server');
  const { pg, redis, temporal, kube } = await startThrowAwayServers(dir);
  installTenantClientCrd(kube.kubeconfigPath);
  step(`Kubernetes API server ready ${secs(kube.readyAfterMs)} after its start`);
  const [apiPort, notificationsPort, smtpPort, eventsPort, erpPort, chatPort] = (await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  )) as [number, number, number, number, number, number];
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'bench',
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    ACCOUNT_API_URL: `http://127.0.0.1:${apiPort}`,
    NOTIFICATIONS_PORT: String(notificationsPort),
    NOTIFICATIONS_URL: `http://127.0.0.1:${notificationsPort}`,
    SMTP_PORT: String(smtpPort),
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    ERP_PORT: String(erpPort),
    ERP_URL: `http://127.0.0.1:${erpPort}`,
    CHAT_PORT: String(chatPort),
    CHAT_URL: `http://127.0.0.1:${chatPort}`,
    FILESTORE_ROOT: path.join(dir, 'filestore'),
    BACKUP_ROOT: path.join(dir, 'backups'),
    TENANT_PROBE_INTERVAL: '100ms',
    KUBECONFIG: kube.kubeconfigPath,
    TENANT_CONTROLLER_RESYNC: '500ms',
    KUBERNETES_NAMESPACE: 'default',
  };
  const cfg = parseConfig(env);

  step('migrating and building the starter/18 template');
  const pool = createPool(cfg.DATABASE_URL, 4);
  closers.push(() => pool.end());
  await migrate(pool);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  await ensureErpTemplates(cfg.ERP_DATABASE_URL, { tiers: ['starter'], versions: ['18'] });

  step('starting the services, the stand-ins and the account API');
  const quiet = createLogger({ level: 'silent' });
  const sink = await startSmtpSink({ port: smtpPort, dir: path.join(dir, 'mail') });
  closers.push(() => sink.close());
  const notifications = await startNotifications(cfg);
  closers.push(() => notifications.close());
  const events = await startEvents(cfg);
  closers.push(() => events.close());
  const erp = await startErpStandIn({
    host: '127.0.0.1',
    port: erpPort,
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    logger: quiet,
  });
  closers.push(() => erp.close());
  const chat = await startChatStandIn({
    host: '127.0.0.1',
    port: chatPort,
    token: cfg.CHAT_TOKEN,
    teamId: cfg.CHAT_TEAM_ID,
  });
  closers.push(() => chat.close());
  const api = await startApi(cfg);
  closers.push(() => api.close());
  const consumer = await startProvisionedConsumer(cfg);
  closers.push(() => consumer.close());

  step('starting the worker process');
  worker = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'worker/index.ts')], {
    cwd: root,
    env: { ...process.env, ...env, TEMPORAL_LOG_LEVEL: 'WARN' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const workerPid = worker.pid!;
  step('starting the TenantClient controller process');
  controller = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'services/tenant-controller/index.ts')], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const controllerPid = controller.pid!;

  const custom = tenantClientsApi(kube.kubeconfigPath);

  /** Applies the tenants at once; resolves with each one's time from its apply to Ready=True. */
  async function provision(names: string[]): Promise<number[]> {
    const t0 = Date.now();
    await Promise.all(names.map((name) => createTenantClient(custom, name, 'Bench Owner')));
    const readyAfter = new Map<string, number>();
    while (readyAfter.size < names.length) {
      if (Date.now() - t0 > 300_000)
        throw new Error(`only ${readyAfter.size} of ${names.length} tenants Ready after 5 minutes`);
      // what an operator sees: the status on the API server (kubectl get tenantclients)
      for (const name of await readyTenantClients(custom))
        if (names.includes(name) && !readyAfter.has(name)) readyAfter.set(name, Date.now() - t0);
      await new Promise((r) => setTimeout(r, 50));
    }
    return names.map((n) => readyAfter.get(n)!);
  }

  step('warming up (the worker bundles its workflows on start)');
  await provision(['warm-up']);

  step('one tenant');
  const [single] = await provision(['bench-one']);

  step(`${TENANTS} tenants applied at once`);
  const pids = { 'API server': kube.pid, etcd: kube.etcdPid, controller: controllerPid, worker: workerPid };
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const t0 = Date.now();
  const times = (
    await provision(Array.from({ length: TENANTS }, (_, i) => `bench-${String(i + 1).padStart(2, '0')}`))
  ).sort((a, b) => a - b);
  const total = Date.now() - t0;
  const memory = memoryOf(workerPid);
  const cpuPerTenant = Object.entries(pids)
    .map(([k, pid]) => `${k} ${(((cpuSeconds(pid) - cpuBefore[k]!) / TENANTS) * 1000).toFixed(0)} ms`)
    .join(', ');
  const apiServerMemory = memoryOf(kube.pid);

  // where the time goes: per step, the mean time from the previous step's end to its own end
  const { rows } = await pool.query<{ steps: { step: string; at: string }[]; created_at: Date }>(
    `SELECT steps, created_at FROM tenant_clients WHERE name LIKE 'bench-__'`,
  );
  const perStep = new Map<string, number[]>();
  for (const r of rows) {
    let previous = r.created_at.getTime();
    for (const st of r.steps) {
      const at = Date.parse(st.at);
      perStep.set(st.step, [...(perStep.get(st.step) ?? []), at - previous]);
      previous = at;
    }
  }
  const breakdown = [...perStep]
    .map(([name, ds]) => `    ${name.padEnd(34)}${(ds.reduce((a, b) => a + b, 0) / ds.length / 1000).toFixed(2)} s`)
    .join('\n');

  console.log(`
Provisioning through the Kubernetes API (template clone, local servers, ${path.basename(root)}):
  one tenant, create → Ready=True       ${secs(single!)}
  ${TENANTS} tenants at once: all Ready in     ${secs(total)}
    time to Ready p50                   ${secs(percentile(times, 50))}
    time to Ready p99                   ${secs(percentile(times, 99))}
    time to Ready min / max             ${secs(times[0]!)} / ${secs(times.at(-1)!)}
    (ANCHORS.md: 200 at once, p99 50.9 s; the goal is under 30 s)
  CPU per tenant                        ${cpuPerTenant}
  worker RSS now / peak                 ${memory.rssMb.toFixed(0)} MB / ${memory.peakMb.toFixed(0)} MB
  API server RSS now / peak             ${apiServerMemory.rssMb.toFixed(0)} MB / ${apiServerMemory.peakMb.toFixed(0)} MB
  ${TENANTS} at once, mean time per step (since the previous one):
${breakdown}
`);
} finally {
  controller?.kill('SIGTERM');
  await new Promise((r) => (controller && controller.exitCode === null ? controller.once('exit', r) : r(undefined)));
  worker?.kill('SIGTERM');
  await new Promise((r) => (worker && worker.exitCode === null ? worker.once('exit', r) : r(undefined)));
  for (const close of closers.reverse()) await close().catch(() => {});
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
