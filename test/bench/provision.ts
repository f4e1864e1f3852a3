/**
 * `npm run bench:provision`: how fast a TenantClient applied to the Kubernetes API becomes a Ready
 * tenant. Starts its own PostgreSQL, Redis, Temporal dev server and Kubernetes API server (etcd +
 * kube-apiserver, with the TenantClient CRD) in a throw-away folder, the events service with its
 * consumer, the notifications service and the account API in this process, and as processes of
 * their own (so their memory and CPU time are their own) the worker, the TenantClient controller and
 * the peers outside the platform (the ERP and chat stand-ins and the SMTP sink). Then:
 *
 *   1. one tenant: time from its creation on the API server to Ready=True in its status there;
 *   2. BENCH_TENANTS (default 20) TenantClients created at once: total time until all are Ready,
 *      p50/p99 time to Ready, the CPU time per tenant of every process (API server, etcd,
 *      PostgreSQL with its backends, Redis, Temporal, controller, worker, the stand-ins, and this
 *      process with the account API and services), each step's wait in Temporal's task queue and its
 *      run time (the worker's metrics), the workflow tasks' queue wait, the API server's requests
 *      per tenant by verb and resource (its /metrics), and the worker's resident memory (current and
 *      peak, from /proc). Tenants not Ready within BENCH_TIMEOUT (default 5 minutes, 10 at 200) are
 *      listed with what their workflows wait for. BENCH_CPU_PROFILE=<folder> has the worker, the
 *      controller and the stand-ins write V8 CPU profiles there and prints the burst's window on their clock.
 *
 * Prints the figures beside the anchors (ANCHORS.md: 200 at once, p99 50.9 s); asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startApi } from '../../api/server.js';
import { startAuth } from '../../services/auth/server.js';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { migrate } from '../../lib/migrate.js';
import { ensureErpTemplates } from '../../scripts/erp-templates.js';
import { createTenantClient, tenantClientsApi, watchReady } from './tenant-clients.js';
import { freePort, kubectl, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { installTenantClientCrd } from '../../scripts/tenant-client-crd.js';
import { startProvisionedConsumer } from '../../services/events/consumers/provisioned.js';
import { startEvents } from '../../services/events/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import {
  activityFigures,
  apiServerRequests,
  explainNotReady,
  memoryOf,
  scrape,
  stepBreakdown,
  treeCpuSeconds,
  workflowTaskWait,
} from './provision-figures.js';
import { startBenchServers, temporalKindFromEnv } from './provision-servers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const TENANTS = Number(process.env.BENCH_TENANTS ?? 20);
const TEMPORAL_KIND = temporalKindFromEnv(process.env.BENCH_TEMPORAL);
/** How long the burst may take before the tenants not Ready are listed (seconds). */
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT ?? (TENANTS > 50 ? 600 : 300)) * 1000;
/** BENCH_CPU_PROFILE=<folder>: the worker, the controller and the stand-ins write V8 CPU profiles there (`--cpu-prof`). */
const profileArgs = process.env.BENCH_CPU_PROFILE
  ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`]
  : [];
const started = Date.now();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s, load ${load()})`);

const dir = throwAwayDir('plana-bench-provision-');
const children: ChildProcess[] = [];
const closers: (() => Promise<unknown>)[] = [];

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

try {
  step(`starting PostgreSQL, Redis, Temporal (${TEMPORAL_KIND}) and the Kubernetes API server`);
  const servers = await startBenchServers(dir, TEMPORAL_KIND);
  const { pg, kube } = servers;
  await installTenantClientCrd(kube.kubeconfigPath);
  step(`Kubernetes API server ready ${secs(kube.readyAfterMs)} after its start`);
  const [apiPort, notificationsPort, smtpPort, eventsPort, erpPort, chatPort, metricsPort, sdkMetricsPort, authPort] =
    (await Promise.all(Array.from({ length: 9 }, () => freePort()))) as number[] as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
  const env: Record<string, string> = {
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    REDIS_URL: servers.redisUrl,
    TEMPORAL_ADDRESS: servers.temporalAddress,
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
    AUTH_PORT: String(authPort),
    AUTH_URL: `http://127.0.0.1:${authPort}`,
    FILESTORE_ROOT: path.join(dir, 'filestore'),
    BACKUP_ROOT: path.join(dir, 'backups'),
    TENANT_PROBE_INTERVAL: '100ms',
    KUBECONFIG: kube.kubeconfigPath,
    TENANT_CONTROLLER_RESYNC: '500ms',
    KUBERNETES_NAMESPACE: 'default',
  };
  const cfg = parseConfig(env);
  /** A Node process of the bench (worker, controller, stand-ins) with its environment; stopped when the bench ends. */
  const spawnNode = (script: string, extraEnv: Record<string, string> = {}, { stdout = false } = {}) => {
    const child = spawn(process.execPath, [...profileArgs, '--import', 'tsx', path.join(root, script)], {
      cwd: root,
      env: { ...process.env, ...env, ...extraEnv },
      stdio: ['ignore', stdout ? 'pipe' : 'ignore', 'inherit'],
    });
    children.push(child);
    return child;
  };

  step('migrating and building the starter/18 template');
  const pool = createPool(cfg.DATABASE_URL, 4);
  closers.push(() => pool.end());
  await migrate(pool);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  await ensureErpTemplates(cfg.ERP_DATABASE_URL, { tiers: ['starter'], versions: ['18'] });

  step('starting the ERP, chat and mail stand-ins (one process: the peers outside the platform)');
  const peers = spawnNode('test/bench/peers-process.ts', { BENCH_DIR: dir }, { stdout: true });
  await new Promise<void>((resolve, reject) => {
    peers.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    peers.once('exit', (code) => reject(new Error(`the stand-ins' process exited (${code}) before it was ready`)));
  });

  step('starting the services (the OpenID provider among them) and the account API');
  const notifications = await startNotifications(cfg);
  closers.push(() => notifications.close());
  // the platform's OpenID provider: each tenant's ERP sign-in step registers its client there
  const auth = await startAuth(cfg);
  closers.push(() => auth.close());
  const events = await startEvents(cfg);
  closers.push(() => events.close());
  const api = await startApi(cfg);
  closers.push(() => api.close());
  const consumer = await startProvisionedConsumer(cfg);
  closers.push(() => consumer.close());

  step('starting the worker process');
  const worker = spawnNode('worker/index.ts', {
    TEMPORAL_LOG_LEVEL: 'WARN',
    METRICS_PORT: String(metricsPort),
    TEMPORAL_METRICS_PORT: String(sdkMetricsPort),
  });
  step('starting the TenantClient controller process');
  const controller = spawnNode('services/tenant-controller/index.ts');

  const custom = tenantClientsApi(kube.kubeconfigPath);
  const temporalConnection = await Connection.connect({ address: servers.temporalAddress });
  closers.push(() => temporalConnection.close());
  const temporal = new Client({ connection: temporalConnection });

  // Ready as an operator sees it: the status on the API server (kubectl get tenantclients -w)
  const readyAt = new Map<string, number>();
  closers.push(await watchReady(kube.kubeconfigPath, (name) => readyAt.set(name, Date.now())));

  /** Applies the tenants at once; each one's time from its apply to Ready=True, and the ones not Ready in time. */
  async function provision(names: string[]): Promise<{ times: number[]; notReady: string[] }> {
    const t0 = Date.now();
    await Promise.all(names.map((name) => createTenantClient(custom, name, 'Bench Owner')));
    const readyAfter = new Map<string, number>();
    while (readyAfter.size < names.length && Date.now() - t0 < TIMEOUT_MS) {
      for (const name of names) if (readyAt.has(name)) readyAfter.set(name, readyAt.get(name)! - t0);
      await new Promise((r) => setTimeout(r, 100));
    }
    const notReady = names.filter((n) => !readyAfter.has(n));
    if (notReady.length) {
      console.log(`  ${notReady.length} of ${names.length} not Ready after ${secs(TIMEOUT_MS)}; what they wait for:`);
      console.log((await explainNotReady(temporal, pool, notReady.slice(0, 20))).join('\n'));
    }
    return { times: [...readyAfter.values()].sort((a, b) => a - b), notReady };
  }

  step('warming up (the worker bundles its workflows on start)');
  await provision(['warm-up']);

  step('one tenant');
  const {
    times: [single],
  } = await provision(['bench-one']);

  step(`${TENANTS} tenants applied at once`);
  const pids: Record<string, number> = {
    ...servers.pids,
    controller: controller.pid!,
    worker: worker.pid!,
    'stand-ins: ERP, chat, mail (outside the platform)': peers.pid!,
  };
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, treeCpuSeconds(pid)]));
  const ownCpuBefore = process.cpuUsage();
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const sdkMetricsUrl = `http://127.0.0.1:${sdkMetricsPort}/metrics`;
  const apiServerMetrics = () => kubectl(kube.kubeconfigPath, ['get', '--raw', '/metrics']);
  const [metricsBefore, sdkBefore] = await Promise.all([scrape(metricsUrl), scrape(sdkMetricsUrl)]);
  const apiServerBefore = apiServerMetrics();
  const loadBefore = load();
  const names = Array.from({ length: TENANTS }, (_, i) => `bench-${String(i + 1).padStart(3, '0')}`);
  const t0 = Date.now();
  const profileWindowStart = process.hrtime.bigint() / 1000n;
  const { times, notReady } = await provision(names);
  const total = Date.now() - t0;
  if (profileArgs.length)
    console.log(
      `  CPU profiles: the burst is ${profileWindowStart}–${process.hrtime.bigint() / 1000n} µs (their clock)`,
    );
  const loadAfter = load();
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, treeCpuSeconds(pid) - cpuBefore[k]!]));
  const own = process.cpuUsage(ownCpuBefore);
  cpu['bench process (account API, services)'] = (own.user + own.system) / 1e6;
  const cpuTotal = Object.values(cpu).reduce((a, b) => a + b, 0);
  const [metricsAfter, sdkAfter] = await Promise.all([scrape(metricsUrl), scrape(sdkMetricsUrl)]);
  const apiServerAfter = apiServerMetrics();
  const memory = memoryOf(worker.pid!);
  const apiServerMemory = memoryOf(kube.pid);
  const workflowTasks = workflowTaskWait(sdkBefore, sdkAfter);
  const perTenant = (s: number) => `${((s / TENANTS) * 1000).toFixed(0)} ms`;

  console.log(`
Provisioning through the Kubernetes API (template clone, local servers, Temporal ${TEMPORAL_KIND === 'dev' ? 'dev server' : 'cluster on PostgreSQL'}, ${path.basename(root)}):
  one tenant, create → Ready=True       ${single === undefined ? 'not Ready' : secs(single)}
  ${TENANTS} tenants at once: ${notReady.length ? `${times.length} Ready within ${secs(TIMEOUT_MS)}` : `all Ready in ${secs(total)}`}
    time to Ready p50                   ${times.length ? secs(percentile(times, 50)) : '-'}
    time to Ready p99                   ${times.length && !notReady.length ? secs(percentile(times, 99)) : 'not all Ready'}
    time to Ready min / max             ${times.length ? `${secs(times[0]!)} / ${secs(times.at(-1)!)}` : '-'}
    (ANCHORS.md: 200 at once, p99 50.9 s; the goal is under 30 s)
  load average before / after           ${loadBefore} / ${loadAfter}
  CPU per tenant, by process (and its children), ${perTenant(cpuTotal)} in all:
${Object.entries(cpu)
  .map(([k, s]) => `    ${k.padEnd(50)}${perTenant(s).padStart(8)}`)
  .join('\n')}
  worker RSS now / peak                 ${memory.rssMb.toFixed(0)} MB / ${memory.peakMb.toFixed(0)} MB
  API server RSS now / peak             ${apiServerMemory.rssMb.toFixed(0)} MB / ${apiServerMemory.peakMb.toFixed(0)} MB
  workflow tasks                        ${workflowTasks.tasks} (${(workflowTasks.tasks / TENANTS).toFixed(1)} per tenant), mean queue wait ${workflowTasks.meanMs.toFixed(0)} ms
  API server requests per tenant (its /metrics), by verb and resource:
${apiServerRequests(apiServerBefore, apiServerAfter, TENANTS)}
  activities (the steps), slowest queue wait first:
${activityFigures(metricsBefore, metricsAfter)}
  mean time per step since the previous one (the workflow's step records):
${await stepBreakdown(pool, names)}
`);
} finally {
  for (const child of children.reverse()) {
    const exited = new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(undefined)));
    child.kill('SIGTERM');
    await exited;
  }
  for (const close of closers.reverse()) await close().catch(() => {});
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
