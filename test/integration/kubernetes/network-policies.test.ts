/**
 * The network layer of §5.1 without a cluster network: the release's NetworkPolicies (the production
 * overlay as `kubectl kustomize` renders it) read by cyclonus, a NetworkPolicy analyzer, for a model
 * of the cluster: a pod of every Deployment and Job of the release, with their labels and named
 * ports, the outside peers (the ingress controller, Prometheus, Odoo, PostgreSQL, Redis, Temporal's
 * frontend, the object store, the log store, kube-dns) with their charts' usual labels, a stranger pod in the
 * platform's namespace and one in another, and three addresses outside the cluster (a public one,
 * a private one and the cloud metadata address). The truth table of every pod to every port of the
 * platform's namespace must be exactly the permitted paths: the service-key inventory's pairs and
 * the infrastructure paths (domain/service-keys/network.ts). The policies pass the API server's
 * dry run in deploy-manifests.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_KEY_INVENTORY, type InventoryPair } from '../../../domain/service-keys/inventory.js';
import {
  OUTSIDE_PORTS,
  permittedConnections,
  permittedPaths,
  type NetworkPeer,
} from '../../../domain/service-keys/network.js';
import { networkPolicies } from '../../../scripts/network-policies.js';
import { analyze, ensureCyclonus, type Connection, type ModelPod } from '../../support/cyclonus.js';
import { releaseObjects, type ReleaseObject } from '../../support/release.js';

interface Workload extends ReleaseObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: { ports?: { name: string; containerPort: number }[] }[] };
    };
  };
}

const release = releaseObjects('production');
const policies = release.filter((o) => o.kind === 'NetworkPolicy');
/** The platform's workloads; the trace store's Zipkin (also in the release) is the outside pod `trace-store` below. */
const workloads = (release.filter((o) => o.kind === 'Deployment' || o.kind === 'Job') as Workload[]).filter(
  (w) => w.metadata.name !== 'zipkin',
);

/** The model's pods: `peer` is what the permitted paths call it (undefined: a pod no path names). */
type Pod = ModelPod & { peer?: NetworkPeer };
const platformPods: Pod[] = workloads.map((w, i) => {
  const process = w.spec.template.metadata.labels['app.kubernetes.io/name']! as NetworkPeer;
  const ports = (w.spec.template.spec.containers[0]!.ports ?? []).map((p) => ({ name: p.name, port: p.containerPort }));
  return {
    namespace: 'plana',
    name: process,
    peer: process,
    labels: w.spec.template.metadata.labels,
    ip: `10.0.1.${i + 1}`,
    // cyclonus's model needs a container on every pod: one that listens on nothing gets a port no probe asks for
    ports: ports.length > 0 ? ports : [{ name: 'none', port: 1 }],
  };
});
const app = (name: string, extra: Record<string, string> = {}) => ({ 'app.kubernetes.io/name': name, ...extra });
const outsidePods: Pod[] = [
  {
    namespace: 'ingress-nginx',
    name: 'ingress-nginx-controller',
    peer: 'ingress-controller',
    labels: app('ingress-nginx', { 'app.kubernetes.io/component': 'controller' }),
    ip: '10.0.2.1',
    ports: [{ name: 'https', port: 443 }],
  },
  {
    namespace: 'monitoring',
    name: 'prometheus',
    peer: 'prometheus',
    labels: app('prometheus'),
    ip: '10.0.2.2',
    ports: [{ name: 'web', port: 9090 }],
  },
  {
    namespace: 'plana',
    name: 'odoo',
    peer: 'odoo',
    labels: app('odoo'),
    ip: '10.0.2.3',
    ports: [{ name: 'odoo', port: OUTSIDE_PORTS.odoo }],
  },
  {
    namespace: 'plana',
    name: 'postgresql',
    peer: 'postgresql',
    labels: app('postgresql', { 'app.kubernetes.io/component': 'primary' }),
    ip: '10.0.2.4',
    ports: [{ name: 'postgresql', port: OUTSIDE_PORTS.postgresql }],
  },
  {
    namespace: 'plana',
    name: 'redis',
    peer: 'redis',
    labels: app('redis', { 'app.kubernetes.io/component': 'master' }),
    ip: '10.0.2.5',
    ports: [{ name: 'redis', port: OUTSIDE_PORTS.redis }],
  },
  {
    namespace: 'plana',
    name: 'temporal-frontend',
    peer: 'temporal',
    labels: app('temporal', { 'app.kubernetes.io/component': 'frontend' }),
    ip: '10.0.2.6',
    ports: [{ name: 'temporal', port: OUTSIDE_PORTS.temporal }],
  },
  {
    namespace: 'plana',
    name: 'seaweedfs',
    peer: 'object-store',
    labels: app('seaweedfs'),
    ip: '10.0.2.7',
    ports: [{ name: 'object-store', port: OUTSIDE_PORTS['object-store'] }],
  },
  {
    namespace: 'plana',
    name: 'victorialogs',
    peer: 'log-store',
    labels: app('victorialogs', { 'app.kubernetes.io/part-of': 'plana' }),
    ip: '10.0.2.9',
    ports: [{ name: 'log-store', port: OUTSIDE_PORTS['log-store'] }],
  },
  {
    namespace: 'plana',
    name: 'zipkin',
    peer: 'trace-store',
    labels: app('zipkin'),
    ip: '10.0.2.10',
    ports: [{ name: 'trace-store', port: OUTSIDE_PORTS['trace-store'] }],
  },
  // what no path names: Temporal's history service, a stranger beside the platform and one elsewhere
  {
    namespace: 'plana',
    name: 'temporal-history',
    labels: app('temporal', { 'app.kubernetes.io/component': 'history' }),
    ip: '10.0.2.8',
    ports: [{ name: 'temporal', port: OUTSIDE_PORTS.temporal }],
  },
  {
    namespace: 'plana',
    name: 'stranger',
    labels: { app: 'stranger' },
    ip: '10.0.3.1',
    ports: [{ name: 'http', port: 8080 }],
  },
  {
    namespace: 'elsewhere',
    name: 'stranger',
    labels: { app: 'stranger' },
    ip: '10.0.3.2',
    ports: [{ name: 'http', port: 8080 }],
  },
  {
    namespace: 'kube-system',
    name: 'kube-dns',
    labels: { 'k8s-app': 'kube-dns' },
    ip: '10.0.4.1',
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
  },
  // addresses outside the cluster, for the webhook dispatcher's egress
  { namespace: 'outside', name: 'public-host', labels: {}, ip: '93.184.216.34', ports: [{ name: 'https', port: 443 }] },
  {
    namespace: 'outside',
    name: 'private-host',
    labels: {},
    ip: '192.168.10.10',
    ports: [{ name: 'https', port: 443 }],
  },
  { namespace: 'outside', name: 'metadata', labels: {}, ip: '169.254.169.254', ports: [{ name: 'https', port: 443 }] },
];
const pods = [...platformPods, ...outsidePods];
const PROBES = [
  ...[
    'http',
    'metrics',
    'sdk-metrics',
    'odoo',
    'postgresql',
    'redis',
    'temporal',
    'object-store',
    'log-store',
    'trace-store',
    'https',
  ].map((name) => ({ name, protocol: 'TCP' as const })),
  { name: 'dns', protocol: 'UDP' as const },
];

const podByKey = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
/** A connection as the permitted paths write it: `from → peer:port` (an outside peer's port by number). */
function asPath(c: Connection): string {
  const [from, to] = [podByKey.get(c.from)!, podByKey.get(c.to)!];
  const name = (p: Pod) => p.peer ?? `${p.namespace}/${p.name}`;
  const outside = !platformPods.includes(to);
  const port = outside ? String(to.ports.find((p) => p.name === c.port)!.port) : c.port;
  return `${name(from)} → ${name(to)}:${port}`;
}
/** The connections into namespace plana, as paths, sorted. */
const intoPlatform = (connections: Connection[]) =>
  [...new Set(connections.filter((c) => c.to.startsWith('plana/')).map(asPath))].sort();

let admitted: Connection[];
beforeAll(() => {
  ensureCyclonus(); // built on first use (1-5 minutes), its progress above
  admitted = analyze(policies, pods, PROBES);
}, 15 * 60_000);

/** The inventory with one more pair: the agents service calling the notifications service. */
const withNewPair: InventoryPair[] = [
  ...SERVICE_KEY_INVENTORY,
  { caller: 'agents', target: 'notifications', live: true, what: 'a new pair', proof: 'holders', from: ['agents'] },
];

describe("the release's NetworkPolicies, read by cyclonus", () => {
  it('admit exactly the service-key pairs of the inventory and the infrastructure paths, nothing more', () => {
    expect(intoPlatform(admitted)).toEqual(permittedConnections());
  });

  it('admit the §5.4 pairs: API → banking, agents, events; agents → data; billing (in the API) → events; the notifications callers', () => {
    const paths = intoPlatform(admitted);
    for (const p of [
      'api → banking:http',
      'api → agents:http',
      'api → events:http',
      'agents → data:http',
      'api → notifications:http',
      'worker → notifications:http',
    ])
      expect(paths).toContain(p);
    expect(paths.filter((p) => p.endsWith(' → banking:http'))).toEqual(['api → banking:http']);
    expect(paths.filter((p) => p.endsWith(' → data:http'))).toEqual(['agents → data:http']);
  });

  it("let no stranger, nor Temporal's other services, reach any port of the platform", () => {
    const paths = intoPlatform(admitted);
    expect(paths.filter((p) => /stranger|temporal-history/.test(p))).toEqual([]);
  });

  it('let the webhook dispatcher reach DNS, its infrastructure and public addresses only (the SSRF guard’s ranges)', () => {
    const reached = admitted
      .filter((c) => c.from === 'plana/webhook-dispatcher')
      .map((c) => `${c.to}:${c.port}`)
      .sort();
    expect(reached).toEqual([
      'kube-system/kube-dns:dns',
      'outside/public-host:https',
      'plana/postgresql:postgresql',
      'plana/redis:redis',
      'plana/temporal-frontend:temporal',
      'plana/victorialogs:log-store',
      'plana/zipkin:trace-store',
    ]);
  });

  it('find a pair added to the inventory without its policy (the policy lacks its path)', () => {
    const expected = permittedConnections(permittedPaths(withNewPair));
    const actual = intoPlatform(admitted);
    expect(expected.filter((p) => !actual.includes(p))).toEqual(['agents → notifications:http']);
  });

  it('find a policy admitting a path the inventory does not hold', () => {
    const generated = JSON.parse(JSON.stringify(networkPolicies(permittedPaths(withNewPair)))) as object[];
    const actual = intoPlatform(analyze(generated, pods, PROBES));
    expect(actual.filter((p) => !permittedConnections().includes(p))).toEqual(['agents → notifications:http']);
  });

  it('are the same in the dev overlay', () => {
    expect(releaseObjects('dev').filter((o) => o.kind === 'NetworkPolicy')).toEqual(policies);
  });
});
