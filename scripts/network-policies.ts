/**
 * The NetworkPolicies of deploy/kubernetes/base (network-policies.yaml), generated from the permitted
 * paths of domain/service-keys/network.ts (the service-key pairs and the infrastructure paths):
 *
 * - `default-deny-ingress`: no pod of namespace plana accepts a connection no policy admits;
 * - `allow-<peer>`: for each pod that paths end at, one ingress rule per port admitting exactly the
 *   pods those paths start from;
 * - `webhook-dispatcher-egress`: the dispatcher connects to its infrastructure (the same paths), DNS,
 *   and any address outside the ranges the webhook SSRF guard refuses (domain/webhooks/addresses.ts:
 *   ipaddr.js's non-unicast ranges, taken from ipaddr.js itself).
 *
 * How a peer is selected (PEER_SELECTORS): a platform process by its `app.kubernetes.io/name` in
 * namespace plana; the ingress controller and Prometheus by their usual labels in their own
 * namespaces (ingress-nginx, monitoring); the operator's Odoo, PostgreSQL, Redis, Temporal frontend
 * and object store by their usual chart labels in namespace plana, where they run there (elsewhere
 * their policy selects nothing); the release's log store by its own label (victorialogs). docs/operators.md says how an overlay changes a selector.
 */
import ipaddr from 'ipaddr.js';
import { stringify } from 'yaml';
import {
  OUTSIDE_PEERS,
  permittedPaths,
  type Endpoint,
  type NetworkPath,
  type NetworkPeer,
  type OutsidePeer,
} from '../domain/service-keys/network.js';

export const NAMESPACE = 'plana';
type Labels = Record<string, string>;
interface PolicyPeer {
  podSelector?: { matchLabels: Labels };
  namespaceSelector?: { matchLabels: Labels };
  ipBlock?: { cidr: string; except?: string[] };
}
interface PolicyPort {
  protocol: 'TCP' | 'UDP';
  port: number | string;
}
interface Rule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: PolicyPort[];
}
export interface NetworkPolicy {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: { name: string; namespace: string; labels: Labels };
  spec: {
    podSelector: { matchLabels?: Labels };
    policyTypes: ('Ingress' | 'Egress')[];
    ingress?: Rule[];
    egress?: Rule[];
  };
}

const inNamespace = (name: string): { matchLabels: Labels } => ({
  matchLabels: { 'kubernetes.io/metadata.name': name },
});
const named = (name: string, extra: Labels = {}) => ({ matchLabels: { 'app.kubernetes.io/name': name, ...extra } });

/** How each outside peer's pods are selected (the labels their usual Helm charts give them). */
export const OUTSIDE_SELECTORS: Record<OutsidePeer, PolicyPeer> = {
  'ingress-controller': { namespaceSelector: inNamespace('ingress-nginx'), podSelector: named('ingress-nginx') },
  prometheus: { namespaceSelector: inNamespace('monitoring'), podSelector: named('prometheus') },
  odoo: { podSelector: named('odoo') },
  postgresql: { podSelector: named('postgresql') },
  redis: { podSelector: named('redis') },
  temporal: { podSelector: named('temporal', { 'app.kubernetes.io/component': 'frontend' }) },
  'object-store': { podSelector: named('seaweedfs') },
  'log-store': { podSelector: named('victorialogs') },
  'trace-store': { podSelector: named('zipkin') },
};

const isOutside = (peer: NetworkPeer): peer is OutsidePeer => (OUTSIDE_PEERS as readonly string[]).includes(peer);
export const peerSelector = (peer: NetworkPeer): PolicyPeer =>
  isOutside(peer) ? OUTSIDE_SELECTORS[peer] : { podSelector: named(peer) };
const portOf = (to: Endpoint): PolicyPort => ({ protocol: 'TCP', port: to.port });

const policy = (name: string, spec: NetworkPolicy['spec']): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'plana' } },
  spec,
});

/** The rules admitting `paths` (all ending at one pod): one rule per port, its sources in a stable order. */
function rulesFor(paths: readonly NetworkPath[], direction: 'from' | 'to'): Rule[] {
  const byPort = new Map<string, { port: PolicyPort; peers: Set<NetworkPeer> }>();
  for (const p of paths) {
    const key = String(p.to.port);
    const entry = byPort.get(key) ?? { port: portOf(p.to), peers: new Set<NetworkPeer>() };
    for (const f of p.from) entry.peers.add(f);
    byPort.set(key, entry);
  }
  return [...byPort.values()]
    .sort((a, b) => String(a.port.port).localeCompare(String(b.port.port)))
    .map(({ port, peers }) => ({ [direction]: [...peers].sort().map(peerSelector), ports: [port] }));
}

/**
 * The ranges the webhook SSRF guard refuses: every range ipaddr.js does not call unicast. IPv4-mapped
 * IPv6 addresses (::ffff:0:0/96) are left to the IPv4 block: the guard checks them as the IPv4
 * address they carry, and Kubernetes reads such a CIDR as IPv4 (not inside ::/0).
 */
export function refusedRanges(kind: 'ipv4' | 'ipv6'): string[] {
  const special = (kind === 'ipv4' ? ipaddr.IPv4.prototype : ipaddr.IPv6.prototype) as unknown as {
    SpecialRanges: Record<string, [ipaddr.IPv4 | ipaddr.IPv6, number] | [ipaddr.IPv4 | ipaddr.IPv6, number][]>;
  };
  const { ipv4Mapped: _carriedByIpv4, ...ranges } = special.SpecialRanges;
  const cidrs = Object.values(ranges).flatMap((r) =>
    Array.isArray(r[0]) ? (r as [ipaddr.IPv4 | ipaddr.IPv6, number][]) : [r as [ipaddr.IPv4 | ipaddr.IPv6, number]],
  );
  return [...new Set(cidrs.map(([net, bits]) => `${net.toString()}/${bits}`))].sort();
}

/** The webhook dispatcher's egress: its infrastructure paths, DNS, and the unicast internet. */
function dispatcherEgress(paths: readonly NetworkPath[]): NetworkPolicy {
  const infrastructure = paths.filter((p) => p.from.includes('webhook-dispatcher') && isOutside(p.to.peer));
  const toInfrastructure = infrastructure.map((p) => ({ to: [peerSelector(p.to.peer)], ports: [portOf(p.to)] }));
  const dns: Rule = {
    to: [{ namespaceSelector: inNamespace('kube-system'), podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
    ports: [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ],
  };
  const internet: Rule = {
    to: [
      { ipBlock: { cidr: '0.0.0.0/0', except: refusedRanges('ipv4') } },
      { ipBlock: { cidr: '::/0', except: refusedRanges('ipv6') } },
    ],
  };
  return policy('webhook-dispatcher-egress', {
    podSelector: named('webhook-dispatcher'),
    policyTypes: ['Egress'],
    egress: [dns, ...toInfrastructure, internet],
  });
}

/** Every NetworkPolicy of namespace plana for `paths`. */
export function networkPolicies(paths: readonly NetworkPath[] = permittedPaths()): NetworkPolicy[] {
  const targets = [...new Set(paths.map((p) => p.to.peer))].filter(
    (peer) => !isOutside(peer) || !OUTSIDE_SELECTORS[peer].namespaceSelector,
  );
  return [
    policy('default-deny-ingress', { podSelector: {}, policyTypes: ['Ingress'] }),
    ...targets.sort().map((peer) =>
      policy(`allow-${peer}`, {
        podSelector: peerSelector(peer).podSelector!,
        policyTypes: ['Ingress'],
        ingress: rulesFor(
          paths.filter((p) => p.to.peer === peer),
          'from',
        ),
      }),
    ),
    dispatcherEgress(paths),
  ];
}

/** network-policies.yaml's text: a header naming its source, then the policies. */
export const networkPoliciesManifest = (paths?: readonly NetworkPath[]) =>
  `# Generated from domain/service-keys/network.ts (and the service-key inventory) by \`npm run deploy:manifests\`: do not edit.\n` +
  networkPolicies(paths)
    .map((p) => stringify(p, { lineWidth: 0 }))
    .join('---\n');
