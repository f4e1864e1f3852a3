/**
 * `npm run dev`: the whole platform on this machine. Starts the real servers privately under
 * DATA_DIR (dev-servers.ts), migrates and seeds the database, runs every platform part and the
 * stand-ins of the outside peers (dev-platform.ts), provisions the demo tenant with a TenantClient
 * (dev-demo.ts) and prints where everything is (dev-banner.ts). Ctrl-C stops all of it
 * (dev-shutdown.ts).
 */
import { mkdirSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { config as loadConfig, parseConfig } from '../lib/config.js';
import { startTracing } from '../lib/tracing.js';
import { startServersInOwnProcessGroups } from './local-servers.js';
import { temporalKindOf } from './local-temporal-cluster.js';
import { buildDevOdooTemplates } from './dev-odoo.js';
import { devTenantDomain } from './dev-tenant-domain.js';
import { DevShutdown, keepGoingWhenOutputCloses } from './dev-shutdown.js';
import { startDevServers } from './dev-servers.js';
import { prepareDatabase, startDevErp, startDevServices, startDevWorkerAndController } from './dev-platform.js';
import { provisionDemoTenant } from './dev-demo.js';
import { printDevBanner } from './dev-banner.js';
import { buildPortal } from './portal-build.js';
import { startPrometheus } from './local-prometheus.js';
import { STAND_IN_ADDONS_PATH } from '../sandbox/erp/install.js';

const started = Date.now();
// the tenants' host names: under .localhost, which a person's browser resolves to this machine (dev-tenant-domain.ts)
process.env.TENANT_DOMAIN = devTenantDomain(path.resolve(parseConfig().DATA_DIR));
// the ERP stand-in's modules: a restored copy is neutralised by their scripts (domain/erp/neutralize.ts)
if (parseConfig().ERP_BACKEND === 'standin') process.env.ERP_ADDONS_PATH ??= STAND_IN_ADDONS_PATH;
// traces to the local Zipkin (dev-servers.ts), unless the environment says otherwise
process.env.OTEL_TRACES_EXPORTER ??= 'zipkin';
const cfg = loadConfig();
// first, so that every server, client and worker this process builds is traced (lib/tracing.ts)
startTracing('plana-dev', cfg);
const dataDir = path.resolve(cfg.DATA_DIR);
mkdirSync(dataDir, { recursive: true });
// PostgreSQL runs as the `postgres` user when we are root, and must reach its folder inside this one
chmodSync(dataDir, 0o755);
const step = (msg: string) => console.log(`\x1b[36m▸\x1b[0m ${msg}`);
/** `--temporal=cluster` (or DEV_TEMPORAL=cluster): the production-shaped Temporal instead of the dev server. */
const temporalKind = temporalKindOf(process.argv.slice(2), process.env.DEV_TEMPORAL);

const shutdown = new DevShutdown();
keepGoingWhenOutputCloses();
process.on('SIGINT', () => void shutdown.stop());
process.on('SIGTERM', () => void shutdown.stop());

startServersInOwnProcessGroups();
try {
  const temporal = temporalKind === 'dev' ? 'the Temporal dev server, ' : '';
  step(
    `starting PostgreSQL, Redis, ${temporal}a Kubernetes API server, the SeaweedFS object store, the VictoriaLogs log store and Zipkin (data in ${dataDir})`,
  );
  const { kube } = await startDevServers(cfg, dataDir, temporalKind, step);

  step('applying migrations and seeding demo data');
  const adminPassword = await prepareDatabase(cfg, dataDir, step);
  const erp = await startDevErp(cfg, shutdown, step);

  step('building the workspace portal (web/ → web/dist, served by the account API at /app/)');
  await buildPortal();

  step('starting the SMTP sink, the notifications service, the account API, the auth service and the worker');
  const services = await startDevServices(cfg, kube.kubeconfigPath, dataDir, shutdown);
  const metrics = await startDevWorkerAndController(cfg, kube.kubeconfigPath, dataDir, shutdown);
  const prometheus = await startPrometheus({
    dir: path.join(dataDir, 'prometheus'),
    port: cfg.DEV_PROMETHEUS_PORT,
    targets: [
      new URL(metrics.metricsUrl).host,
      metrics.temporalMetrics,
      `${new URL(metrics.metricsUrl).hostname}:${metrics.controllerMetricsPort}`,
    ],
  });
  const demo = await provisionDemoTenant(cfg, kube.kubeconfigPath, step);

  printDevBanner(cfg, {
    readySeconds: ((Date.now() - started) / 1000).toFixed(1),
    temporalKind,
    dataDir,
    kube,
    erpUrl: erp.url,
    mailDir: services.mailDir,
    chat: services.chat,
    bankUrl: services.bank.url,
    llmUrl: services.llm.url,
    adminPassword,
    demoSubscription: demo.subscription,
    metrics,
    prometheusUrl: prometheus.url,
  });
  // real Odoo: the other tiers' templates, built while the platform runs (stopped with it)
  if (cfg.ERP_BACKEND === 'odoo') {
    const stopBuilds = new AbortController();
    const builds = buildDevOdooTemplates(cfg, { odooSrc: process.env.ODOO_SRC, log: step, signal: stopBuilds.signal });
    shutdown.add('Odoo template builds', { close: () => (stopBuilds.abort(), builds) });
  }
} catch (err) {
  console.error(`\x1b[31m✘ npm run dev failed:\x1b[0m ${(err as Error).message}`);
  await shutdown.stop(1);
}
