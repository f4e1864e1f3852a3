/**
 * The tenant workflows as their starters see them: the lifecycle workflow (`tenant:<name>`: type
 * name, input, the state it carries across continue-as-new, its signal, query and updates) and the
 * backup workflow the per-tenant schedules run. The implementations live in workflows/; this
 * module is what domain/ may import. @temporalio/workflow's define* only name the messages, so
 * they are safe in client code; no Node built-ins: bundled into the workflow sandbox too.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { InPlaceRestoreRequest } from './restore-in-place.js';
import type { TenantClientSpec, TenantStatus, Tier } from './types.js';

// ---- the tenant lifecycle (workflows/tenant-lifecycle) ----

/**
 * How long one from-scratch install of a tenant database (its template missing) may run: the
 * lifecycle's `install` activity's start-to-close timeout, three times §3.2's "about 15 minutes";
 * a stuck install ends there. Tests that watch an install on real Odoo wait as long.
 */
export const TENANT_INSTALL_TIMEOUT_MINUTES = 45;

/** The workflow type the lifecycle is registered under. */
export const TENANT_LIFECYCLE_WORKFLOW = 'tenantLifecycle';

export const tenantWorkflowId = (name: string) => `tenant:${name}`;

/** A TenantClient object's spec at one of its generations (Kubernetes' `metadata.generation`). */
export interface ApplyRequest {
  /** The TenantClient object's uid: a workflow takes specs from the object that started it only. */
  uid: string;
  generation: number;
  spec: TenantClientSpec;
}

/** The settings the workflow runs with (from the platform configuration at apply time), in ms. */
export interface LifecycleSettings {
  readyDeadlineMs: number;
  soakPeriodMs: number;
  probeIntervalMs: number;
  reconcileBackoffMaxMs: number;
  /**
   * A Ready tenant is probed this often (the database answers as the API user); a failure turns
   * Ready=False naming the database, a later success Ready again. Defaults to one minute.
   */
  readyProbeIntervalMs?: number;
  /** Continue as new past this many history events (defaults to 5,000). */
  historyLimit?: number;
  /** Shorter activity retry intervals for every policy (tests); production uses the policies' own. */
  retryIntervals?: { initialMs: number; maximumMs: number };
}

export interface TenantLifecycleInput {
  name: string;
  /** The TenantClient object's uid (it owns the subdomain reservation). */
  uid: string;
  /** The object's `metadata.generation` of `spec`. */
  generation: number;
  spec: TenantClientSpec;
  settings: LifecycleSettings;
  /** The state carried across continue-as-new. */
  carried?: LifecycleState;
  /** The trace the reconciles run in until Ready (W3C headers), carried across continue-as-new. */
  carriedTrace?: Record<string, string>;
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
  /** The in-place restore running as this workflow's child (its name), if one does. */
  restoringInPlace?: string;
}

/** The signature the workflow implements (checked in workflows/index.ts); typed starts use it. */
export type TenantLifecycleWorkflow = (input: TenantLifecycleInput) => Promise<TenantStatus>;

/** A new spec (apply); ignored when its generation is not newer than the one the workflow has, or from another object. */
export const applySignal = defineSignal<[ApplyRequest]>('apply');
export const statusQuery = defineQuery<TenantStatus>('status');
/** Customer cancelled: start the soak timer. */
export const cancelUpdate = defineUpdate<TenantStatus>('cancel');
/** Stop the soak timer; everything stays. */
export const reactivateUpdate = defineUpdate<TenantStatus>('reactivate');
/**
 * Its TenantClient was deleted (the controller, once the object has a deletionTimestamp): cancelled
 * if it was not (the soak period runs), and never reactivated from then on.
 */
export const tenantClientDeletedUpdate = defineUpdate<TenantStatus>('tenantClientDeleted');
/** Deprovision now (only after a cancel). */
export const deleteUpdate = defineUpdate<TenantStatus>('delete');
/** Create the chat room again on the next reconcile. */
export const retryChatRoomUpdate = defineUpdate<TenantStatus>('retryChatRoom');
/**
 * Restore a backup into the tenant: the child workflow `restore:<name>` (restore-tenant-in-place.ts)
 * runs it while this workflow holds every other step of the tenant (reconcile, probe, deprovision),
 * then reconciles the restored tenant. Answers the child's workflow id; refused unless the tenant is
 * Ready, Unavailable or Cancelled with no in-place restore running.
 */
export const restoreInPlaceUpdate = defineUpdate<string, [InPlaceRestoreRequest]>('restoreInPlace');

// ---- backups (workflows/backup-tenant.ts; their retention: workflows/apply-retention.ts) ----

/** The workflow type the per-tenant backup schedules run. */
export const BACKUP_TENANT_WORKFLOW = 'backupTenant';

export interface BackupTenantInput {
  tenant: string;
  tier: Tier;
  /** The tenant database (= tenant hostname). */
  database: string;
}

export type BackupTenantWorkflow = (input: BackupTenantInput) => Promise<unknown>;

export const BACKUP_RETENTION_SCHEDULE_ID = 'backup-retention';
