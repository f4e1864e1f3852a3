/**
 * The network layer of §5.1 ("only permitted caller pods reach a target service"): which pods may
 * open a connection to which port. deploy/kubernetes's NetworkPolicies are generated from this
 * module (scripts/network-policies.ts, `npm run deploy:manifests`), and the analyzer test
 * (test/integration/kubernetes/network-policies.test.ts) checks that they admit exactly these paths.
 *
 * Two kinds of path:
 * - the service-key pairs (inventory.ts): each live pair's `from` pods reach its target's port. A new
 *   pair is one entry there; its policy follows from it.
 * - the paths without a service key (INFRASTRUCTURE_PATHS below): the ingress controller in front of
 *   the public entries, the ERP behind the tenant ingress, PostgreSQL, Redis, Temporal, the object
 *   store and the log store from the processes that use them, Prometheus on every metrics port, and
 *   every process's spans to the trace store.
 */
import { SERVICE_KEY_INVENTORY, type ServiceTarget } from './inventory.js';

/** The platform's processes: one Deployment each in namespace plana (the migrate Job too), named so. */
export const PLATFORM_PROCESSES = [
  'api',
  'worker',
  'notifications',
  'events',
  'auth',
  'banking',
  'agents',
  'data',
  'tenant-ingress',
  'provisioned-consumer',
  'webhook-dispatcher',
  'tenant-controller',
  'migrate',
] as const;
export type PlatformProcess = (typeof PLATFORM_PROCESSES)[number];

/**
 * The pods the platform talks to that are not its own image's processes: the cluster's ingress
 * controller, its Prometheus, the operator's Odoo, PostgreSQL, Redis, Temporal frontend and
 * S3-compatible object store (where they run in the cluster), the log store (VictoriaLogs, which
 * the release runs: deploy/kubernetes/base/log-store.yaml) and the trace store (Zipkin:
 * deploy/kubernetes/base/trace-store.yaml). scripts/network-policies.ts says how each is selected.
 */
export const OUTSIDE_PEERS = [
  'ingress-controller',
  'prometheus',
  'odoo',
  'postgresql',
  'redis',
  'temporal',
  'object-store',
  'log-store',
  'trace-store',
] as const;
export type OutsidePeer = (typeof OUTSIDE_PEERS)[number];
export type NetworkPeer = PlatformProcess | OutsidePeer;

/**
 * A port a path ends at: a platform process's named container port (`http`, `metrics`,
 * `sdk-metrics`), or an outside peer's port number.
 */
export type Endpoint =
  { peer: PlatformProcess; port: 'http' | 'metrics' | 'sdk-metrics' } | { peer: OutsidePeer; port: number };

/** The listening ports of the outside peers the platform connects to. */
export const OUTSIDE_PORTS = {
  odoo: 8069,
  postgresql: 5432,
  redis: 6379,
  temporal: 7233,
  'object-store': 8333,
  'log-store': 9428,
  'trace-store': 9411,
} as const;

/** Where each service-key target listens. */
export const TARGET_ENDPOINTS: Record<ServiceTarget, Endpoint> = {
  'account-api': { peer: 'api', port: 'http' },
  notifications: { peer: 'notifications', port: 'http' },
  events: { peer: 'events', port: 'http' },
  auth: { peer: 'auth', port: 'http' },
  banking: { peer: 'banking', port: 'http' },
  agents: { peer: 'agents', port: 'http' },
  data: { peer: 'data', port: 'http' },
  // the tenants' automation rules post to the events service (domain/erp-events/ingestion.ts)
  'event-ingestion': { peer: 'events', port: 'http' },
};

export interface NetworkPath {
  from: readonly NetworkPeer[];
  to: Endpoint;
  what: string;
}

/** Every platform process but the migrate Job, which listens on nothing. */
const DEPLOYMENTS = PLATFORM_PROCESSES.filter((p) => p !== 'migrate');

/** The paths that carry no service key. */
export const INFRASTRUCTURE_PATHS: readonly NetworkPath[] = [
  {
    from: ['ingress-controller'],
    to: { peer: 'api', port: 'http' },
    what: 'the account API, the portal and the ops routes',
  },
  {
    from: ['ingress-controller'],
    to: { peer: 'tenant-ingress', port: 'http' },
    what: "the tenants' routes (the composed Ingresses, through the Service odoo of each version namespace)",
  },
  {
    from: ['ingress-controller'],
    to: { peer: 'auth', port: 'http' },
    what: 'the OpenID provider browsers and tenant ERPs sign in at',
  },
  {
    from: ['api', 'worker', 'data'],
    to: { peer: 'tenant-ingress', port: 'http' },
    what: "the tenants' ERPs over XML-RPC (ERP_URL): dashboards, provisioning, the agents' figures",
  },
  {
    from: ['tenant-ingress'],
    to: { peer: 'odoo', port: OUTSIDE_PORTS.odoo },
    what: 'everything of a tenant host but /svc/saas/…',
  },
  {
    from: [...PLATFORM_PROCESSES, 'odoo'],
    to: { peer: 'postgresql', port: OUTSIDE_PORTS.postgresql },
    what: 'the platform database, the tenant databases and their templates',
  },
  {
    from: ['api', 'auth', 'data', 'events', 'notifications', 'provisioned-consumer', 'webhook-dispatcher'],
    to: { peer: 'redis', port: OUTSIDE_PORTS.redis },
    what: 'the events stream, rate limits, revocations',
  },
  {
    from: ['api', 'worker', 'tenant-controller', 'provisioned-consumer', 'webhook-dispatcher'],
    to: { peer: 'temporal', port: OUTSIDE_PORTS.temporal },
    what: 'Temporal: workflows started, signalled, run',
  },
  {
    from: ['worker'],
    to: { peer: 'object-store', port: OUTSIDE_PORTS['object-store'] },
    what: 'backups (BACKUP_S3_ENDPOINT)',
  },
  {
    from: PLATFORM_PROCESSES,
    to: { peer: 'log-store', port: OUTSIDE_PORTS['log-store'] },
    what: "every process's log lines; the worker mirrors the execution log, the API reads it (LOG_STORE_URL)",
  },
  {
    from: ['prometheus'],
    to: { peer: 'log-store', port: OUTSIDE_PORTS['log-store'] },
    what: "Prometheus scrapes the log store's /metrics",
  },
  {
    from: DEPLOYMENTS,
    to: { peer: 'trace-store', port: OUTSIDE_PORTS['trace-store'] },
    what: "every process's spans (OTEL_TRACES_EXPORTER=zipkin, lib/tracing.ts)",
  },
  ...DEPLOYMENTS.map((p): NetworkPath => ({
    from: ['prometheus'],
    to: { peer: p, port: 'metrics' },
    what: 'Prometheus scrapes /metrics',
  })),
  {
    from: ['prometheus'],
    to: { peer: 'worker', port: 'sdk-metrics' },
    what: "Prometheus scrapes the Temporal SDK's worker metrics",
  },
];

/** The paths of the live service-key pairs: each pair's `from` pods to its target's port. */
export const serviceKeyPaths = (inventory = SERVICE_KEY_INVENTORY): NetworkPath[] =>
  inventory
    .filter((p) => p.live)
    .map((p) => ({ from: p.from, to: TARGET_ENDPOINTS[p.target], what: `${p.caller} → ${p.target}: ${p.what}` }));

/** Every permitted path: the service-key pairs', then the infrastructure's. */
export const permittedPaths = (inventory = SERVICE_KEY_INVENTORY): NetworkPath[] => [
  ...serviceKeyPaths(inventory),
  ...INFRASTRUCTURE_PATHS,
];

/** `from → peer:port` for every single connection the paths permit, sorted, without repeats. */
export function permittedConnections(paths: readonly NetworkPath[] = permittedPaths()): string[] {
  const all = paths.flatMap((p) => p.from.map((f) => `${f} → ${p.to.peer}:${p.to.port}`));
  return [...new Set(all)].sort();
}
