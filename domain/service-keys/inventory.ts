/**
 * The service-key inventory (specification §5.4, plus the platform's own pairs): one key per
 * caller/target pair. `live` pairs have both ends in this repository today; their keys are created
 * on first start (bootstrap.ts). A pair that is not `live` is one whose service does not exist yet:
 * it gets its key when its target does (flip `live`).
 */
import type { NetworkPeer } from './network.js';

export const SERVICE_TARGETS = [
  'account-api',
  'notifications',
  'events',
  'auth',
  'banking',
  'agents',
  'data',
  'event-ingestion',
] as const;
export type ServiceTarget = (typeof SERVICE_TARGETS)[number];

/**
 * How a rotation proves that a pair's consumer switched before the old key dies (step 4; docs/operators.md
 * "Service keys", "Switch proof"). The target's usage records are the evidence in every case:
 *
 * - `calls`: the consumer's own calls. It must call with the new key id, and the old key id must be
 *   silent for the quiet period. An idle consumer cannot prove it, so the rotation rolls back at
 *   the deadline. For consumers the platform does not run, and the default for a pair not listed.
 * - `holders`: long-lived processes that read the key only through the platform's secret store
 *   (createSecretStore / reportingStore, holders.ts). Every process that has read a pair's key
 *   *reports what it holds*: one `GET /.well-known/service-key` to the target with the key its
 *   calls would send now, at once when it sees a new version and at least every
 *   SERVICE_KEY_HOLDER_HEARTBEAT_MS while idle. So a process still holding the old key keeps the
 *   old key id busy, and the old key id silent for the quiet period (at least two heartbeats plus
 *   the usage flush) proves that no running process holds it. If one held it at the switch (the
 *   old key was used within that window before it), the new key id must also have been used.
 * - `per-run`: a command that reads the secret store on every run and keeps nothing between runs
 *   (the operator CLI). A run started after the switch reads the new key; so the old key id silent
 *   for the quiet period (longer than a run) proves the switch. A key copied by hand (OPS_API_KEY)
 *   is outside the proof: take it again after a rotation.
 * - `rules`: the key is held in the tenant ERPs' automation rules (erp → event-ingestion: each
 *   rule's URL carries a token made from the key, domain/erp-events/ingestion.ts), which post only
 *   when records change, so their use cannot be waited for. The rotation itself moves them: after
 *   the switch it rewrites the rules of every routed tenant to the new key's tokens (the
 *   reconcile's own code) and must get "no tenant left on the old token" back; then the old key id
 *   silent for the quiet period, and a last pass over the rules (a reconcile that read the old key
 *   just before the switch may have written it back) before the old key is revoked. A tenant whose
 *   ERP cannot be updated rolls the rotation back (rules rewritten back to the old key).
 */
export type SwitchProof = 'calls' | 'holders' | 'per-run' | 'rules';
export const SWITCH_PROOFS: readonly SwitchProof[] = ['calls', 'holders', 'per-run', 'rules'];

export interface ServiceKeyPair {
  caller: string;
  target: ServiceTarget;
  live: boolean;
  what: string;
  /** How a rotation of this pair proves its consumer switched (above). */
  proof: SwitchProof;
}

/**
 * A pair of the platform's inventory: with the pods its calls come from, which the network layer
 * (§5.1, network.ts) lets reach the target's port and no other pod does.
 */
export interface InventoryPair extends ServiceKeyPair {
  from: readonly NetworkPeer[];
}

export const SERVICE_KEY_INVENTORY: readonly InventoryPair[] = [
  // the platform's own
  {
    caller: 'operator',
    target: 'account-api',
    live: true,
    what: 'operator CLI → account API ops routes (/api/ops/…)',
    proof: 'per-run',
    from: ['ingress-controller'], // the CLI runs outside the cluster, at API_PUBLIC_URL
  },
  {
    caller: 'provisioning',
    target: 'account-api',
    live: true,
    what: 'client.provisioned consumer → POST /api/webhooks/provisioned',
    proof: 'holders',
    from: ['provisioned-consumer'],
  },
  {
    caller: 'erp',
    target: 'account-api',
    live: true,
    what: "tenant ERPs' /svc/saas/* endpoints → account API (/api/saas/…: tiers, modules, subscription)",
    proof: 'holders',
    from: ['tenant-ingress'],
  },
  {
    caller: 'saas-jobs',
    target: 'account-api',
    live: true,
    what: "platform jobs → tenant ERPs' legacy callbacks (/svc/saas/job/<id>/update, /svc/saas/backup/callback), forwarded to the account API",
    proof: 'per-run',
    from: ['tenant-ingress'], // posted to the tenant's host, passed through with the caller's key
  },
  {
    caller: 'worker',
    target: 'notifications',
    live: true,
    what: 'Temporal worker (welcome e-mail) → notifications service',
    proof: 'holders',
    from: ['worker'],
  },
  {
    caller: 'worker',
    target: 'events',
    live: true,
    what: 'Temporal worker (client.provisioned) → events service',
    proof: 'holders',
    from: ['worker'],
  },
  {
    caller: 'operator',
    target: 'auth',
    live: true,
    what: 'operator tools → auth service (status, a smoke login); other internal services get a pair when they call it',
    proof: 'per-run',
    from: ['ingress-controller'],
  },
  // §5.4
  {
    caller: 'account-api',
    target: 'events',
    live: true,
    what: 'account API → events service (§5.4)',
    proof: 'holders',
    from: ['api'],
  },
  {
    caller: 'account-api',
    target: 'notifications',
    live: true,
    what: 'account API → notifications service (§5.4 "callers of the notifications service")',
    proof: 'holders',
    from: ['api'],
  },
  {
    caller: 'billing-webhooks',
    target: 'events',
    live: true,
    what: 'billing webhook receiver → events service (§5.4)',
    proof: 'holders',
    from: ['api'],
  },
  {
    caller: 'account-api',
    target: 'banking',
    live: true,
    what: 'account API → banking service (§5.4)',
    proof: 'holders',
    from: ['api'],
  },
  {
    caller: 'account-api',
    target: 'agents',
    live: true,
    what: 'account API → agents service (§5.4)',
    proof: 'holders',
    from: ['api'],
  },
  {
    caller: 'agents',
    target: 'data',
    live: true,
    what: 'agents service → data service (§5.4)',
    proof: 'holders',
    from: ['agents'],
  },
  {
    caller: 'erp',
    target: 'event-ingestion',
    live: true,
    what: "tenant ERPs' automation rules → event ingestion (per-tenant HMAC tokens of the key in the rules' URLs)",
    proof: 'rules',
    from: ['odoo'],
  },
];

/** A pair's switch proof: as declared, `calls` for a pair the inventory does not list. */
export const switchProofOf = (
  pair: { caller: string; target: string },
  inventory: readonly ServiceKeyPair[] = SERVICE_KEY_INVENTORY,
): SwitchProof => inventory.find((p) => p.caller === pair.caller && p.target === pair.target)?.proof ?? 'calls';

/**
 * Where a consumer process reports the key it holds (`holders` pairs): a route of the target that
 * checks X-API-Key with the shared ServiceKeyVerifier, so the report lands in the target's usage
 * records, and does nothing else. Every platform service serves GET /.well-known/service-key
 * (registerServiceKeyCheck, service-keys.ts).
 */
export const SERVICE_KEY_CHECK_PATH = '/.well-known/service-key';

export const pairName = (p: { caller: string; target: string }) => `${p.caller}→${p.target}`;
