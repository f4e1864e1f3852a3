/**
 * What the tenant lifecycle workflow shares with the API, the CLI, the activities and the tests:
 * the TenantClient spec, its Crossplane-style status, the workflow's messages and the pure rules
 * that turn resource states into the `Synced` and `Ready` conditions. Bundled into the workflow
 * sandbox: no Node built-ins, no I/O.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

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

export const tenantWorkflowId = (name: string) => `tenant:${name}`;
export const backupScheduleId = (name: string) => `backup:${name}`;
/** The namespace the tenant's route lives in (§2.3). */
export const routeNamespace = (erpVersion: ErpVersion) => `plana-odoo-${erpVersion}`;

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
export const resourceKinds = ['database', 'apiUser', 'route', 'filestore', 'backupSchedule', 'chatRoom'] as const;
export type ResourceKind = (typeof resourceKinds)[number];

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
  /** When a cancelled tenant is deprovisioned unless it is reactivated first. */
  deprovisionAt?: string;
  deprovisionedAt?: string;
  /** The id of the `client.provisioned` event, once emitted. */
  provisionedEventId?: string;
}

// ---- messages ----

export interface ApplyRequest {
  generation: number;
  spec: TenantClientSpec;
}

/** The settings the workflow runs with (from the platform configuration at apply time), in ms. */
export interface LifecycleSettings {
  readyDeadlineMs: number;
  soakPeriodMs: number;
  probeIntervalMs: number;
  reconcileBackoffMaxMs: number;
  /** Continue as new past this many history events (defaults to 5,000). */
  historyLimit?: number;
  /** Shorter activity retry intervals for every policy (tests); production uses the policies' own. */
  retryIntervals?: { initialMs: number; maximumMs: number };
}

export interface TenantLifecycleInput {
  name: string;
  /** Unique id of this TenantClient (it owns the subdomain reservation). */
  uid: string;
  generation: number;
  spec: TenantClientSpec;
  settings: LifecycleSettings;
  /** The state carried across continue-as-new. */
  carried?: LifecycleState;
}

/** Everything the workflow keeps: the status it reports plus what it needs to go on. */
export interface LifecycleState extends TenantStatus {
  spec: TenantClientSpec;
  /** The tenant hostname (= database name), known once the subdomain is reserved. */
  hostname: string;
  /** When the current generation must be Ready (epoch ms). */
  deadlineAt: number;
  chatRetry: boolean;
  deleteRequested: boolean;
}

/** A new spec (apply); ignored when its generation is not newer than the one the workflow has. */
export const applySignal = defineSignal<[ApplyRequest]>('apply');
export const statusQuery = defineQuery<TenantStatus>('status');
/** Customer cancelled: start the soak timer. */
export const cancelUpdate = defineUpdate<TenantStatus>('cancel');
/** Stop the soak timer; everything stays. */
export const reactivateUpdate = defineUpdate<TenantStatus>('reactivate');
/** Deprovision now (only after a cancel). */
export const deleteUpdate = defineUpdate<TenantStatus>('delete');
/** Create the chat room again on the next reconcile. */
export const retryChatRoomUpdate = defineUpdate<TenantStatus>('retryChatRoom');

// ---- rules ----

export function newResources(at: string): Record<ResourceKind, ResourceState> {
  const entries = resourceKinds.map((k) => [
    k,
    { externalName: '', synced: 'Unknown', state: 'Pending', message: 'not reconciled yet', lastTransitionTime: at },
  ]);
  return Object.fromEntries(entries) as Record<ResourceKind, ResourceState>;
}

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

/** The resources that are not Synced, except a failed chat room, which never blocks (non-fatal). */
export function unreadyResources(resources: Record<ResourceKind, ResourceState>): ResourceKind[] {
  return resourceKinds.filter((k) => k !== 'chatRoom' && resources[k].synced !== 'True');
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
} as const;

export interface BackupTenantInput {
  tenant: string;
  tier: Tier;
  /** The tenant database (= tenant hostname). */
  database: string;
}

export const BACKUP_RETENTION_SCHEDULE_ID = 'backup-retention';
