/**
 * The service-key inventory (specification §5.4, plus the platform's own pairs): one key per
 * caller/target pair. `live` pairs have both ends in this repository today; their keys are created
 * on first start (bootstrap.ts). The others are the specification's pairs for services that do not
 * exist yet: they get keys when their target does (flip `live`).
 */
export const SERVICE_TARGETS = ['account-api', 'notifications', 'events', 'auth', 'banking', 'agents', 'data', 'event-ingestion'] as const;
export type ServiceTarget = (typeof SERVICE_TARGETS)[number];

export interface ServiceKeyPair {
  caller: string;
  target: ServiceTarget;
  live: boolean;
  what: string;
}

export const SERVICE_KEY_INVENTORY: readonly ServiceKeyPair[] = [
  // the platform's own
  { caller: 'operator', target: 'account-api', live: true, what: 'operator CLI → account API ops routes (/api/ops/…)' },
  { caller: 'provisioning', target: 'account-api', live: true, what: 'client.provisioned consumer → POST /api/webhooks/provisioned' },
  { caller: 'erp', target: 'account-api', live: true, what: 'tenant ERPs\' /svc/saas/* endpoints → account API (/api/saas/…: tiers, modules, subscription)' },
  { caller: 'saas-jobs', target: 'account-api', live: true, what: 'platform jobs → tenant ERPs\' legacy callbacks (/svc/saas/job/<id>/update, /svc/saas/backup/callback), forwarded to the account API' },
  { caller: 'worker', target: 'notifications', live: true, what: 'Temporal worker (welcome e-mail) → notifications service' },
  { caller: 'worker', target: 'events', live: true, what: 'Temporal worker (client.provisioned) → events service' },
  { caller: 'operator', target: 'auth', live: true, what: 'operator tools → auth service (status, a smoke login); other internal services get a pair when they call it' },
  // §5.4
  { caller: 'account-api', target: 'events', live: true, what: 'account API → events service (§5.4)' },
  { caller: 'account-api', target: 'notifications', live: true, what: 'account API → notifications service (§5.4 "callers of the notifications service")' },
  { caller: 'billing-webhooks', target: 'events', live: true, what: 'billing webhook receiver → events service (§5.4)' },
  { caller: 'account-api', target: 'banking', live: true, what: 'account API → banking service (§5.4)' },
  { caller: 'account-api', target: 'agents', live: true, what: 'account API → agents service (§5.4)' },
  { caller: 'agents', target: 'data', live: true, what: 'agents service → data service (§5.4)' },
  { caller: 'erp', target: 'event-ingestion', live: false, what: 'tenant ERP → event ingestion' },
];

export const pairName = (p: { caller: string; target: string }) => `${p.caller}→${p.target}`;
