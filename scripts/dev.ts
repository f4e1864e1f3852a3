/**
 * `npm run dev`: the whole platform on this machine. Starts PostgreSQL, Redis and the Temporal
 * dev server (with its Web UI) as private servers under DATA_DIR, applies migrations, seeds the
 * demo data, runs the SMTP sink, the notifications service, the account API and the worker, and
 * prints where everything is. Ctrl-C stops all of it.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { config as loadConfig, parseConfig } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';
import { ensureServiceKeys } from '../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { legacyKeySeeds } from '../domain/erp-events/ingestion.js';
import { createLogger } from '../lib/logger.js';
import {
  findKubeBinary,
  KUBERNETES_VERSION,
  kubectl,
  ManagedProcess,
  startKubernetes,
  startPostgres,
  startRedis,
  startSeaweedfs,
  startServersInOwnProcessGroups,
  startTemporal,
  stopAll,
} from './local-servers.js';
import { installTenantClientCrd } from './tenant-client-crd.js';
import { startTemporalCluster, temporalKindOf, temporalPostgresFrom } from './local-temporal-cluster.js';
import { applyDemoTenantClient, prepareDemoErp, seedDemo, DEMO } from './seed.js';
import { buildDevOdooTemplates, ensureDevOdoo } from './dev-odoo.js';
import { devTenantDomain, resolvesToLoopback } from './dev-tenant-domain.js';
import { tenantHostname } from '../domain/erp/tenant-database.js';
import { tenantBaseUrl } from '../domain/identity/oidc-clients.js';
import { startTenantIngress } from '../services/tenant-ingress/server.js';
import { startErpStandIn } from '../sandbox/erp/server.js';
import {
  event as stripeEvent,
  sandboxIds,
  sandboxIdsFile,
  sendEvent,
  subscription as stripeSubscription,
} from '../sandbox/stripe/sender.js';
import { startSmtpSink } from '../sandbox/smtp/sink.js';
import { startNotifications } from '../services/notifications/server.js';
import { startBanking } from '../services/banking/server.js';
import { startBankStandIn } from '../sandbox/bank/server.js';
import { startApi } from '../api/server.js';
import { startEvents } from '../services/events/server.js';
import { startAuth } from '../services/auth/server.js';
import { startProvisionedConsumer } from '../services/events/consumers/provisioned.js';
import { startDispatcher } from '../services/webhooks/dispatcher.js';
import { startChatStandIn } from '../sandbox/chat/server.js';
import { startLlmStandIn } from '../sandbox/llm/server.js';
import { startAgents } from '../services/agents/server.js';
import { startData } from '../services/data/server.js';
import { createWorker, ensureWorkerSchedules, installRuntimeLogger, startRevokedKeyAlerter } from '../worker/index.js';
import { connectTemporal } from '../lib/temporal.js';
import { startMetricsServer } from '../lib/metrics.js';
import { build as buildPortal } from 'vite';

const started = Date.now();
/** `npm run dev`'s metrics server when METRICS_PORT is unset (the SDK's and the controller's on the next two ports). */
const DEV_METRICS_PORT = 9464;
// the tenants' host names: under .localhost, which a person's browser resolves to this machine (dev-tenant-domain.ts)
process.env.TENANT_DOMAIN = devTenantDomain(path.resolve(parseConfig().DATA_DIR));
const cfg = loadConfig();
const dataDir = path.resolve(cfg.DATA_DIR);
mkdirSync(dataDir, { recursive: true });
// PostgreSQL runs as the `postgres` user when we are root, and must reach its folder inside this one
chmodSync(dataDir, 0o755);
const step = (msg: string) => console.log(`\x1b[36m▸\x1b[0m ${msg}`);
const portOf = (u: string) => Number(new URL(u).port);
/** `--temporal=cluster` (or DEV_TEMPORAL=cluster): the production-shaped Temporal instead of the dev server. */
const temporalKind = temporalKindOf(process.argv.slice(2), process.env.DEV_TEMPORAL);

const isLoopback = (u: string | undefined) => !!u && ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(u).hostname);

/** SeaweedFS for the backups when BACKUP_S3_ENDPOINT is on this machine (the development default); otherwise the store is someone else's. */
async function startLocalObjectStore() {
  if (!isLoopback(cfg.BACKUP_S3_ENDPOINT) || !cfg.BACKUP_S3_ACCESS_KEY_ID || !cfg.BACKUP_S3_SECRET_ACCESS_KEY) return;
  await startSeaweedfs({
    dir: path.join(dataDir, 'seaweedfs'),
    port: portOf(cfg.BACKUP_S3_ENDPOINT!),
    bucket: cfg.BACKUP_S3_BUCKET,
    accessKeyId: cfg.BACKUP_S3_ACCESS_KEY_ID,
    secretAccessKey: cfg.BACKUP_S3_SECRET_ACCESS_KEY,
  });
}

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
  step(
    `starting PostgreSQL, Redis, ${temporalKind === 'dev' ? 'the Temporal dev server, ' : ''}a Kubernetes API server and the SeaweedFS object store (data in ${dataDir})`,
  );
  const temporalPort = Number(cfg.TEMPORAL_ADDRESS.split(':').pop());
  const db = new URL(cfg.DATABASE_URL);
  const [kube] = await Promise.all([
    startKubernetes({ dir: path.join(dataDir, 'kubernetes'), port: cfg.DEV_KUBE_APISERVER_PORT }),
    startPostgres({
      dir: path.join(dataDir, 'postgres'),
      port: portOf(cfg.DATABASE_URL),
      user: decodeURIComponent(db.username),
      password: decodeURIComponent(db.password),
      database: db.pathname.slice(1),
    }),
    startRedis({ dir: path.join(dataDir, 'redis'), port: portOf(cfg.REDIS_URL), persistent: true }),
    temporalKind === 'dev'
      ? startTemporal({
          dir: path.join(dataDir, 'temporal'),
          port: temporalPort,
          uiPort: portOf(cfg.TEMPORAL_UI_URL),
          persistent: true,
        })
      : undefined,
    startLocalObjectStore(),
  ]);
  if (temporalKind === 'cluster') {
    step('starting the production-shaped Temporal (Temporal server on PostgreSQL, docs/temporal-cluster.md)');
    // its databases (temporal, temporal_visibility) on the platform's PostgreSQL server
    await startTemporalCluster({
      dir: path.join(dataDir, 'temporal-cluster'),
      port: temporalPort,
      postgres: temporalPostgresFrom(cfg.DATABASE_URL),
      namespace: cfg.TEMPORAL_NAMESPACE,
    });
  }

  installTenantClientCrd(kube.kubeconfigPath);
  // the controller's Lease lives in the platform's namespace
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.KUBERNETES_NAMESPACE } };
  kubectl(kube.kubeconfigPath, ['apply', '-f', '-'], JSON.stringify(namespace));
  step('applying migrations and seeding demo data');
  const pool = createPool(cfg.DATABASE_URL, 2);
  await migrate(pool);
  // first start: every platform caller → target pair gets its service key (registry + local secret store)
  const newKeys = await ensureServiceKeys(
    pool,
    new PgSecretStore(pool, cfg.SECRETS_KEY),
    undefined,
    legacyKeySeeds(cfg.SECRETS_KEY),
  );
  if (newKeys.length)
    step(`service keys created: ${newKeys.map((k) => `${k.caller}→${k.target} ${k.keyId}`).join(', ')}`);
  const passwordFile = path.join(dataDir, 'dev-admin-password');
  const adminPassword =
    cfg.DEV_ADMIN_PASSWORD ??
    (existsSync(passwordFile) ? readFileSync(passwordFile, 'utf8').trim() : randomBytes(12).toString('base64url'));
  if (!cfg.DEV_ADMIN_PASSWORD) writeFileSync(passwordFile, adminPassword, { mode: 0o600 });
  await seedDemo(pool, { adminPassword });
  // the ERP: the stand-in, or with ERP_BACKEND=odoo the tenant ingress in front of a real Odoo 18 at
  // ODOO_UPSTREAM_URL (odoo-bin --db-filter=^%h$ on ERP_DATABASE_URL's server); the demo tenant's
  // provisioning, below, clones its template and makes its automation rules (invoice.posted,
  // payment.received, stock.changed → the event ingestion)
  if (cfg.ERP_BACKEND !== 'odoo') await prepareDemoErp(cfg);
  else {
    const odoo = await ensureDevOdoo(cfg, { odooSrc: process.env.ODOO_SRC, tier: 'starter', log: step });
    if (odoo) closers.push({ name: 'Odoo', close: () => odoo.close() });
  }
  const erp =
    cfg.ERP_BACKEND === 'odoo'
      ? await startTenantIngress(cfg) // in front of the Odoo at ODOO_UPSTREAM_URL: /svc/saas here, the rest to Odoo
      : await startErpStandIn({
          host: cfg.ERP_HOST,
          port: cfg.ERP_PORT,
          platformDatabaseUrl: cfg.DATABASE_URL,
          erpDatabaseUrl: cfg.ERP_DATABASE_URL,
          // /svc/saas/… on every tenant host answers from the account API (erp → account-api key from the secret store)
          saas: { accountApiUrl: cfg.ACCOUNT_API_URL, secretsKey: cfg.SECRETS_KEY },
        });
  closers.push({ name: cfg.ERP_BACKEND === 'odoo' ? 'tenant ingress' : 'ERP stand-in', close: () => erp.close() });
  await pool.end();

  step('building the workspace portal (web/ → web/dist, served by the account API at /app/)');
  await buildPortal({ configFile: new URL('../web/vite.config.ts', import.meta.url).pathname, logLevel: 'warn' });

  step('starting the SMTP sink, the notifications service, the account API, the auth service and the worker');
  const mailDir = path.join(dataDir, 'mail');
  const sink = await startSmtpSink({ host: cfg.SMTP_HOST, port: cfg.SMTP_PORT, dir: mailDir });
  closers.push({ name: 'SMTP sink', close: () => sink.close() });
  const notifications = await startNotifications(cfg);
  closers.push({ name: 'notifications service', close: () => notifications.close() });
  // billing writes a tier change to the TenantClient on the Kubernetes API
  const api = await startApi({ ...cfg, KUBECONFIG: kube.kubeconfigPath });
  closers.push({ name: 'account API', close: () => api.close() });
  // the auth service (§4.5): login and refresh for internal services, on the account API's sessions
  const auth = await startAuth(cfg);
  closers.push({ name: 'auth service', close: () => auth.close() });
  // the events service, the consumer of client.provisioned, and the support chat stand-in (Mattermost API v4)
  const events = await startEvents(cfg);
  closers.push({ name: 'events service', close: () => events.close() });
  const provisioned = await startProvisionedConsumer(cfg);
  closers.push({ name: 'provisioned consumer', close: () => provisioned.close() });
  // the webhook dispatcher (consumer group `webhooks`): first attempts; retries run in the worker
  const dispatcher = await startDispatcher(cfg);
  closers.push({ name: 'webhook dispatcher', close: () => dispatcher.close() });
  const chat = await startChatStandIn({
    host: cfg.CHAT_HOST,
    port: cfg.CHAT_PORT,
    token: cfg.CHAT_TOKEN,
    teamId: cfg.CHAT_TEAM_ID,
    dir: path.join(dataDir, 'chat'),
  });
  closers.push({ name: 'chat stand-in', close: () => chat.close() });
  // the banking service and the bank it reads locally (NextGenPSD2 stand-in, BANKING_BANKS points at it)
  const bank = await startBankStandIn({ host: '127.0.0.1', port: cfg.BANK_SANDBOX_PORT, bankId: 'sandbox' });
  closers.push({ name: 'bank stand-in', close: () => bank.close() });
  const banking = await startBanking(cfg);
  closers.push({ name: 'banking service', close: () => banking.close() });
  // the agents (§4.4), the data service their tools read through, and the model stand-in (OpenAI Chat Completions)
  const llm = await startLlmStandIn({
    port: cfg.LLM_STANDIN_PORT,
    apiKey: cfg.LLM_KEY,
    chunkDelayMs: cfg.LLM_STANDIN_CHUNK_DELAY_MS,
  });
  closers.push({ name: 'LLM stand-in', close: () => llm.close() });
  const data = await startData(cfg);
  closers.push({ name: 'data service', close: () => data.close() });
  const agents = await startAgents(cfg);
  closers.push({ name: 'agents service', close: () => agents.close() });
  // one metrics server for the services, the API and the worker of this process; the SDK's worker
  // metrics and the controller (its own process) on the next two ports (docs/operators.md, Metrics)
  const metricsPort = cfg.METRICS_PORT ?? DEV_METRICS_PORT;
  const metrics = await startMetricsServer({ port: metricsPort, host: cfg.METRICS_HOST });
  closers.push({ name: 'metrics server', close: () => metrics.close() });
  const temporalMetrics = `${cfg.METRICS_HOST}:${cfg.TEMPORAL_METRICS_PORT ?? metricsPort + 1}`;
  const workerLog = createLogger({ name: 'worker' });
  installRuntimeLogger(workerLog, { temporalMetrics });
  const { worker, connection, closeDeps } = await createWorker(cfg);
  const running = worker.run();
  const alerter = startRevokedKeyAlerter(cfg, workerLog);
  closers.push({
    name: 'worker',
    close: async () => {
      worker.shutdown();
      await running;
      await alerter.stop();
      await connection.close();
      await closeDeps();
    },
  });
  // backups' and the execution log's retention, the service keys' annual rotation
  const scheduler = await connectTemporal(cfg);
  await ensureWorkerSchedules(scheduler, cfg);
  await scheduler.connection.close();
  // the TenantClient controller, a process of its own (as in a cluster): TenantClients on the
  // Kubernetes API drive the tenant workflows
  const controller = startTenantControllerProcess(kube.kubeconfigPath, metricsPort + 2);
  closers.push({ name: 'tenant controller', close: () => controller.stop() });
  // the demo tenant: a TenantClient applied with kubectl like any other (unchanged on a restart)
  step(`provisioning the demo tenant "${DEMO.tenant}" (kubectl apply, workflow tenant:${DEMO.tenant})`);
  const demoTier = cfg.ERP_BACKEND === 'odoo' ? 'starter' : 'pro';
  const demo = await applyDemoTenantClient(kube.kubeconfigPath, demoTier);
  const demoHost = tenantHostname(DEMO.tenant, cfg.TENANT_DOMAIN);
  step(
    `demo tenant ${demo.result}: ${demo.ready === 'True' ? 'Ready' : `${demo.phase}, not Ready yet (kubectl describe tenantclient ${DEMO.tenant} says why)`}`,
  );
  // the demo workspace's subscription, as the payment provider stand-in reports it (once: a repeat is a no-op by event id)
  const demoSubscription = await subscribeDemo(cfg, DEMO.tenant, demoTier);

  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`
\x1b[32m✔ The platform is up\x1b[0m (ready in ${secs} s)

  Account API     ${cfg.API_PUBLIC_URL}            (probes: /healthz, /readyz)
  Portal          ${cfg.API_PUBLIC_URL}/app/            (sign in with the demo login below)
  API docs        ${cfg.API_PUBLIC_URL}/docs
  Temporal UI     ${temporalKind === 'dev' ? cfg.TEMPORAL_UI_URL : `none: the production-shaped Temporal at ${cfg.TEMPORAL_ADDRESS} (temporal --address ${cfg.TEMPORAL_ADDRESS} workflow list)`}
  Kubernetes API  ${kube.server}           (etcd + kube-apiserver v${KUBERNETES_VERSION}; admin kubeconfig below)
  Backups (S3)    ${cfg.BACKUP_S3_ENDPOINT ?? `AWS S3 (${cfg.BACKUP_S3_REGION})`}            (bucket ${cfg.BACKUP_S3_BUCKET}${isLoopback(cfg.BACKUP_S3_ENDPOINT) ? `, SeaweedFS in ${path.join(dataDir, 'seaweedfs')}` : ''})
  Notifications   ${cfg.NOTIFICATIONS_URL}
  Auth service    ${cfg.AUTH_URL}            (login/refresh for internal services, X-API-Key; docs at /swagger)
  Tenant ERP      ${erp.url}            (${cfg.ERP_BACKEND === 'odoo' ? `tenant ingress in front of real Odoo 18 at ${cfg.ODOO_UPSTREAM_URL}` : 'Odoo XML-RPC stand-in'}; demo tenant ${demoHost})
  Demo ERP        ${tenantBaseUrl(cfg, demoHost)}/web/login   (${resolvesToLoopback(cfg.TENANT_DOMAIN) ? `the portal's Open ERP goes here; *.${cfg.TENANT_DOMAIN} resolves to this machine in Chromium and Firefox` : `for the portal's Open ERP, map the tenants' hosts to 127.0.0.1, e.g. in /etc/hosts: 127.0.0.1 ${demoHost}`})
  Events          ${cfg.EVENTS_URL}            (stream "${cfg.EVENTS_STREAM}"; GET /api/v1/events/info with X-API-Key)
  Banking         ${cfg.BANKING_URL}            (banks: ${cfg.BANKING_BANKS}; GET /api/banking/adapters with a banking:read key)
  Bank stand-in   ${bank.url}            (NextGenPSD2 XS2A; SCA pages at /sca/<authorisation>)
  Agents          ${cfg.AGENTS_URL}            (agents finance, collections; model ${cfg.LLM_MODEL} at ${cfg.LLM_URL})
  Data service    ${cfg.DATA_URL}            (the agents' tools read the workspace's ERP figures here)
  LLM stand-in    ${llm.url}   (OpenAI Chat Completions, deterministic; sandbox/llm)
  Support chat    ${chat.url}            (Mattermost API v4 stand-in, team ${chat.teamId}; rooms in ${path.join(dataDir, 'chat')})
  Metrics         ${metrics.url}   (Prometheus: API, services, worker activities; Temporal SDK at http://${temporalMetrics}/metrics, controller on port ${metricsPort + 2})
  Mail (SMTP sink) 127.0.0.1:${cfg.SMTP_PORT}, messages land in ${mailDir}
  Demo login      ${DEMO.adminEmail} / ${adminPassword}${cfg.DEV_ADMIN_PASSWORD ? ' (from DEV_ADMIN_PASSWORD)' : ''}

Next steps (in another terminal):
  export KUBECONFIG=${kube.kubeconfigPath} PATH=${path.dirname(findKubeBinary('kubectl'))}:$PATH
  kubectl get tenantclients                          # the demo tenant "${DEMO.tenant}": SYNCED, READY, TIER, VERSION, AGE
  kubectl describe tenantclient ${DEMO.tenant}              # its conditions, composed resources and Events (the workflow's steps)
  kubectl apply -f examples/tenant-acme.yaml         # provision a tenant of your own; \`kubectl get tc acme -w\` to watch it
  kubectl delete tenantclient acme --wait=false      # cancel it: Ready=False Deleting until deprovisioned after the soak period
  npm run cli -- describe tenant ${DEMO.tenant}                # the same from the CLI (the same Kubernetes API), with the Temporal UI link
  npm run cli -- resend-welcome ${DEMO.tenant}      # support: send the demo welcome e-mail again
  npm run cli -- erp post-invoice ${DEMO.tenant} --amount 120   # an invoice.posted from the demo ERP to the workspace's webhooks
                                                     #   (receivers on 127.0.0.1 may be registered here: WEBHOOK_ALLOWED_ADDRESSES=${cfg.WEBHOOK_ALLOWED_ADDRESSES || '(none)'})
  npm run cli -- service-keys                        # caller → target pairs, key ids, states, last use
  npm run stripe -- fail ${DEMO.tenant}    # a failed payment: admins e-mailed, dunning:${DEMO.tenant}:<n> in the Temporal UI (then: npm run stripe -- pay ${DEMO.tenant})
  curl -s -H 'Host: ${demoHost}' -H "x-api-key: $(npx tsx scripts/service-key.ts saas-jobs account-api)" ${erp.url}/svc/saas/subscription/${demoSubscription}   # the tenant ERP's SaaS endpoint (ERP users or the platform's key only)
  # ask the finance agent (a key with agents:invoke, created as docs/api.md shows):
  curl -sN -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"message":"What is our cash balance?"}' ${cfg.API_PUBLIC_URL}/api/agents/finance/chat/stream
  curl -s ${cfg.API_PUBLIC_URL}/readyz
  curl -s -H 'Host: ${demoHost}' ${erp.url}/web/health      # the demo tenant's ERP health probe
  ls ${mailDir.startsWith(process.cwd()) ? path.relative(process.cwd(), mailDir) : mailDir}    # the e-mails that went out

Ctrl-C stops everything.
`);
  // real Odoo: the other tiers' templates, built while the platform runs (stopped with it)
  if (cfg.ERP_BACKEND === 'odoo') {
    const stopBuilds = new AbortController();
    const builds = buildDevOdooTemplates(cfg, { odooSrc: process.env.ODOO_SRC, log: step, signal: stopBuilds.signal });
    closers.push({ name: 'Odoo template builds', close: () => (stopBuilds.abort(), builds) });
  }
} catch (err) {
  console.error(`\x1b[31m✘ npm run dev failed:\x1b[0m ${(err as Error).message}`);
  await shutdown(1);
}

/** The TenantClient controller (services/tenant-controller) as a child process; its log beside the servers'. */
function startTenantControllerProcess(kubeconfigPath: string, metricsPort: number) {
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

/** Sends the demo workspace's `customer.subscription.created` (the demo tenant's tier, 3 seats) through the real webhook; returns its id. */
async function subscribeDemo(c: typeof cfg, workspace: string, tier: 'starter' | 'pro'): Promise<string> {
  const ids = sandboxIds(workspace, 1, sandboxIdsFile(c.DATA_DIR));
  // a fixed event id: on the next start the same event is a duplicate and changes nothing
  const created = stripeEvent(
    'customer.subscription.created',
    stripeSubscription({ ...ids, id: ids.subscription, workspace, tier, seats: 3 }),
    {
      id: `evt_devdemo${Buffer.from(workspace).toString('hex')}`,
    },
  );
  const res = await sendEvent(
    new URL('/api/webhooks/stripe', c.ACCOUNT_API_URL).toString(),
    c.STRIPE_WEBHOOK_SECRET,
    created,
  );
  if (res.status !== 200)
    throw new Error(`the demo subscription was refused: ${res.status} ${JSON.stringify(res.body)}`);
  return ids.subscription;
}
