/**
 * The TenantClient (§2.3) as the platform knows it: its spec, tiers and ERP versions, its
 * Crossplane-style status, and the pure rules that turn resource states into the `Synced` and
 * `Ready` conditions. Shared by the API, the CLI, the activities and the lifecycle workflow, so it
 * imports nothing: it is bundled into the workflow sandbox too.
 */
export const TENANT_CLIENT_API_VERSION = 'plana.dev/v1alpha1';
export const TENANT_CLIENT_KIND = 'TenantClient';

export const tiers = ['starter', 'pro', 'enterprise'] as const;
export const erpVersions = ['17', '18', '19'] as const;
export type Tier = (typeof tiers)[number];
export type ErpVersion = (typeof erpVersions)[number];

export interface TenantClientSpec {
  subdomain: string;
  projectId: number;
  tier: Tier;
  erpVersion: ErpVersion;
  ownerEmail: string;
  ownerName: string;
}

export const backupScheduleId = (name: string) => `backup:${name}`;
const ROUTE_NAMESPACE_PREFIX = 'plana-odoo-';
/** The namespace the tenant's route lives in (§2.3). */
export const routeNamespace = (erpVersion: ErpVersion) => `${ROUTE_NAMESPACE_PREFIX}${erpVersion}`;
/** The ERP version a route namespace serves: the inverse of `routeNamespace` (`plana-odoo-18` → `18`). */
export const erpVersionOfNamespace = (namespace: string) => namespace.replace(ROUTE_NAMESPACE_PREFIX, '') as ErpVersion;

// ---- status, as Crossplane reports it ----

export type ConditionStatus = 'True' | 'False' | 'Unknown';
export type SyncedReason = 'ReconcileSuccess' | 'ReconcileError';
export type ReadyReason = 'Available' | 'Creating' | 'Unavailable' | 'Deleting';

export interface Condition {
  type: 'Synced' | 'Ready';
  status: ConditionStatus;
  reason: SyncedReason | ReadyReason;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

/** The composed resources of a tenant, in the order they are reconciled. */
export const resourceKinds = [
  'database',
  'apiUser',
  'route',
  'filestore',
  'backupSchedule',
  'chatRoom',
  'erpSignIn',
] as const;
export type ResourceKind = (typeof resourceKinds)[number];

/**
 * The resources whose failure never blocks the tenant (Synced stays True, Ready does not wait):
 * the support chat room, and the ERP's sign-in through the platform's OpenID provider (its client,
 * the ERP's provider record, the members' ERP users), which the next reconcile makes.
 */
export const nonFatalResources: readonly ResourceKind[] = ['chatRoom', 'erpSignIn'];

/** Per-resource state: Synced True/False like a composed resource, plus what it is called outside. */
export interface ResourceState {
  /** The resource's name in the system that holds it (database name, host, folder, schedule id, room). */
  externalName: string;
  synced: ConditionStatus;
  /** Pending (not reconciled yet), Created, Failed, Deleted, Archived (chat room kept inactive). */
  state: 'Pending' | 'Created' | 'Failed' | 'Deleted' | 'Archived';
  message: string;
  lastTransitionTime: string;
}

/**
 * The lifecycle phase shown next to the conditions: Provisioning → Ready (or Unavailable) →
 * Cancelled (soak timer running) → Deprovisioning → Deprovisioned.
 */
export type TenantPhase = 'Provisioning' | 'Ready' | 'Unavailable' | 'Cancelled' | 'Deprovisioning' | 'Deprovisioned';

export interface StepRecord {
  step: string;
  at: string;
  outcome: 'ok' | 'failed' | 'skipped';
  message: string;
}

export interface TenantStatus {
  name: string;
  generation: number;
  observedGeneration: number;
  phase: TenantPhase;
  conditions: Condition[];
  resources: Record<ResourceKind, ResourceState>;
  /** The most recent steps, newest last (at most 30). */
  steps: StepRecord[];
  currentStep: string;
  readyAt?: string;
  cancelledAt?: string;
  /** When its TenantClient was deleted (`kubectl delete`): cancelled for good, never reactivated. */
  tenantClientDeletedAt?: string;
  /** When a cancelled tenant is deprovisioned unless it is reactivated first. */
  deprovisionAt?: string;
  deprovisionedAt?: string;
  /** The id of the `client.provisioned` event, once emitted. */
  provisionedEventId?: string;
}
// ---- rules ----

export function newResources(at: string): Record<ResourceKind, ResourceState> {
  const entries = resourceKinds.map((k) => [k, pendingResource(at)]);
  return Object.fromEntries(entries) as Record<ResourceKind, ResourceState>;
}

/** A resource not reconciled yet. */
export const pendingResource = (at: string): ResourceState => ({
  externalName: '',
  synced: 'Unknown',
  state: 'Pending',
  message: 'not reconciled yet',
  lastTransitionTime: at,
});

/** Sets a condition, keeping lastTransitionTime when the status does not change (as Crossplane does). */
export function setCondition(
  conditions: Condition[],
  next: Omit<Condition, 'lastTransitionTime'>,
  at: string,
): Condition[] {
  const previous = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : at;
  const updated: Condition = { ...next, lastTransitionTime };
  const others = conditions.filter((c) => c.type !== next.type);
  return next.type === 'Synced' ? [updated, ...others] : [...others, updated];
}

export function getCondition(status: Pick<TenantStatus, 'conditions'>, type: Condition['type']): Condition | undefined {
  return status.conditions.find((c) => c.type === type);
}

/** The resources that are not Synced, except the non-fatal ones, which never block. */
export function unreadyResources(resources: Record<ResourceKind, ResourceState>): ResourceKind[] {
  return resourceKinds.filter((k) => !nonFatalResources.includes(k) && resources[k].synced !== 'True');
}

export function unreadyMessage(resources: Record<ResourceKind, ResourceState>): string {
  const unready = unreadyResources(resources);
  return unready.length ? `Unready resources: ${unready.join(', ')}` : '';
}

/** One line per failing resource, e.g. `database: template database "erp_tpl_pro_18" does not exist`. */
export function resourceErrors(resources: Record<ResourceKind, ResourceState>): string[] {
  return resourceKinds.filter((k) => resources[k].state === 'Failed').map((k) => `${k}: ${resources[k].message}`);
}

/** Business failures of the lifecycle that retrying cannot fix. */
export const TenantErrorType = {
  SubdomainTaken: 'SubdomainTaken',
  PathOutsideRoot: 'PathOutsideRoot',
  /** A name that cannot be a database, a host or a folder (applied before names were checked as RFC 1123 labels). */
  InvalidName: 'InvalidName',
} as const;
