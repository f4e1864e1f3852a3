/** What `npm run dev` prints once the platform is up: where each part is, and what to try first. */
import path from 'node:path';
import type { Config } from '../lib/config.js';
import { tenantHostname } from '../domain/erp/tenant-database.js';
import { tenantBaseUrl } from '../domain/identity/oidc-clients.js';
import { findKubeBinary, KUBERNETES_VERSION } from './local-servers.js';
import { resolvesToLoopback } from './dev-tenant-domain.js';
import { isLoopback } from './dev-servers.js';
import type { TemporalKind } from './local-temporal-cluster.js';
import { DEMO } from './seed.js';

export interface DevBanner {
  readySeconds: string;
  temporalKind: TemporalKind;
  dataDir: string;
  kube: { server: string; kubeconfigPath: string };
  erpUrl: string;
  mailDir: string;
  chat: { url: string; teamId: string };
  bankUrl: string;
  llmUrl: string;
  adminPassword: string;
  demoSubscription: string;
  metrics: { metricsUrl: string; temporalMetrics: string; controllerMetricsPort: number };
  prometheusUrl: string;
}

export function printDevBanner(cfg: Config, b: DevBanner): void {
  console.log(`
\x1b[32m✔ The platform is up\x1b[0m (ready in ${b.readySeconds} s)
${whereEverythingIs(cfg, b)}
Next steps (in another terminal):
${nextSteps(cfg, b)}
Ctrl-C stops everything.
`);
}

function whereEverythingIs(cfg: Config, b: DevBanner): string {
  const demoHost = tenantHostname(DEMO.tenant, cfg.TENANT_DOMAIN);
  const temporalUi =
    b.temporalKind === 'dev'
      ? cfg.TEMPORAL_UI_URL
      : `none: the production-shaped Temporal at ${cfg.TEMPORAL_ADDRESS} (temporal --address ${cfg.TEMPORAL_ADDRESS} workflow list)`;
  const seaweed = isLoopback(cfg.BACKUP_S3_ENDPOINT) ? `, SeaweedFS in ${path.join(b.dataDir, 'seaweedfs')}` : '';
  const erpKind =
    cfg.ERP_BACKEND === 'odoo'
      ? `tenant ingress in front of real Odoo 18 at ${cfg.ODOO_UPSTREAM_URL}`
      : 'Odoo XML-RPC stand-in';
  const openErp = resolvesToLoopback(cfg.TENANT_DOMAIN)
    ? `the portal's Open ERP lands in its web client; *.${cfg.TENANT_DOMAIN} resolves to this machine in Chromium and Firefox`
    : `for the portal's Open ERP, map the tenants' hosts to 127.0.0.1, e.g. in /etc/hosts: 127.0.0.1 ${demoHost}`;
  return `
  Account API     ${cfg.API_PUBLIC_URL}            (probes: /healthz, /readyz)
  Portal          ${cfg.API_PUBLIC_URL}/app/            (sign in with the demo login below)
  API docs        ${cfg.API_PUBLIC_URL}/docs
  Temporal UI     ${temporalUi}
  Kubernetes API  ${b.kube.server}           (etcd + kube-apiserver v${KUBERNETES_VERSION}; admin kubeconfig below)
  Backups (S3)    ${cfg.BACKUP_S3_ENDPOINT ?? `AWS S3 (${cfg.BACKUP_S3_REGION})`}            (bucket ${cfg.BACKUP_S3_BUCKET}${seaweed})
  Notifications   ${cfg.NOTIFICATIONS_URL}
  Auth service    ${cfg.AUTH_URL}            (login/refresh for internal services, X-API-Key; docs at /swagger)
  Tenant ERP      ${b.erpUrl}            (${erpKind}; demo tenant ${demoHost})
  Demo ERP        ${tenantBaseUrl(cfg, demoHost)}/web/login   (${openErp})
  Events          ${cfg.EVENTS_URL}            (stream "${cfg.EVENTS_STREAM}"; GET /api/v1/events/info with X-API-Key)
  Banking         ${cfg.BANKING_URL}            (banks: ${cfg.BANKING_BANKS}; GET /api/banking/adapters with a banking:read key)
  Bank stand-in   ${b.bankUrl}            (NextGenPSD2 XS2A; SCA pages at /sca/<authorisation>)
  Agents          ${cfg.AGENTS_URL}            (agents finance, collections; model ${cfg.LLM_MODEL} at ${cfg.LLM_URL})
  Data service    ${cfg.DATA_URL}            (the agents' tools read the workspace's ERP figures here)
  LLM stand-in    ${b.llmUrl}   (OpenAI Chat Completions, deterministic; sandbox/llm)
  Support chat    ${b.chat.url}            (Mattermost API v4 stand-in, team ${b.chat.teamId}; rooms in ${path.join(b.dataDir, 'chat')})
  Log store       ${logStore(cfg)}
  Traces          ${traces(cfg)}
  Metrics         ${b.metrics.metricsUrl}   (Prometheus: API, services, worker activities; Temporal SDK at http://${b.metrics.temporalMetrics}/metrics, controller on port ${b.metrics.controllerMetricsPort})
  Prometheus      ${b.prometheusUrl}            (scrapes all three; the alert rules of deploy/prometheus/alerts.yml at /alerts)
  Mail (SMTP sink) 127.0.0.1:${cfg.SMTP_PORT}, messages land in ${b.mailDir}
  Demo login      ${DEMO.adminEmail} / ${b.adminPassword}${cfg.DEV_ADMIN_PASSWORD ? ' (from DEV_ADMIN_PASSWORD)' : ''}
`;
}

function logStore(cfg: Config): string {
  if (!cfg.LOG_STORE_URL) return 'none (LOG_STORE_URL unset)';
  const ui = isLoopback(cfg.LOG_STORE_URL) ? `${cfg.LOG_STORE_URL}/select/vmui` : cfg.LOG_STORE_URL;
  return `${ui}   (VictoriaLogs: the execution log and every service's lines, ${cfg.LOG_STORE_RETENTION}; npm run cli -- logs ${DEMO.workspace})`;
}

function nextSteps(cfg: Config, b: DevBanner): string {
  const demoHost = tenantHostname(DEMO.tenant, cfg.TENANT_DOMAIN);
  const mailDir = b.mailDir.startsWith(process.cwd()) ? path.relative(process.cwd(), b.mailDir) : b.mailDir;
  return `  export KUBECONFIG=${b.kube.kubeconfigPath} PATH=${path.dirname(findKubeBinary('kubectl'))}:$PATH
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
  curl -s -H 'Host: ${demoHost}' -H "x-api-key: $(npx tsx scripts/service-key.ts saas-jobs account-api)" ${b.erpUrl}/svc/saas/subscription/${b.demoSubscription}   # the tenant ERP's SaaS endpoint (ERP users or the platform's key only)
  # ask the finance agent (a key with agents:invoke, created as docs/api.md shows):
  curl -sN -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"message":"What is our cash balance?"}' ${cfg.API_PUBLIC_URL}/api/agents/finance/chat/stream
  curl -s ${cfg.API_PUBLIC_URL}/readyz
  curl -s -H 'Host: ${demoHost}' ${b.erpUrl}/web/health      # the demo tenant's ERP health probe
  ls ${mailDir}    # the e-mails that went out
`;
}

/** Where the traces go: a problem body's requestId is a trace id, opened at TRACE_UI_URL/<requestId>. */
function traces(cfg: Config): string {
  if (cfg.OTEL_TRACES_EXPORTER === 'none') return 'off (OTEL_TRACES_EXPORTER=none)';
  const where =
    cfg.OTEL_TRACES_EXPORTER === 'zipkin' ? `Zipkin at ${new URL(cfg.OTEL_EXPORTER_ZIPKIN_ENDPOINT).origin}` : 'OTLP';
  return `${cfg.TRACE_UI_URL}/<requestId>   (${where}; sampled ${cfg.OTEL_TRACES_SAMPLER_ARG * 100}%)`;
}
