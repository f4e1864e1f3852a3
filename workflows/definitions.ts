/**
 * What workers, clients and tests share about the workflows: the task queue default, the
 * custom search attributes (registered on the Temporal server at start-up), and message types.
 * No Node built-ins here: this module is bundled into the workflow sandbox.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ErpVersion, TenantClientSpec, TenantStatus, Tier } from '../domain/tenants/types.js';
import type { SwitchProof } from '../domain/service-keys/inventory.js';

export const searchAttributes = {
  tenant: defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD),
  workspace: defineSearchAttributeKey('Workspace', SearchAttributeType.KEYWORD),
  tier: defineSearchAttributeKey('Tier', SearchAttributeType.KEYWORD),
  erpVersion: defineSearchAttributeKey('ErpVersion', SearchAttributeType.KEYWORD),
  currentStep: defineSearchAttributeKey('CurrentStep', SearchAttributeType.KEYWORD),
  webhookEndpoint: defineSearchAttributeKey('WebhookEndpoint', SearchAttributeType.KEYWORD),
  eventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
} as const;

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and `operator search-attribute create`. */
export const searchAttributeRegistrations: string[] = Object.values(searchAttributes).map(
  (k) => `${k.name}=Keyword`,
);

export interface WelcomeEmailInput {
  /** TenantClient name (= subdomain). */
  tenant: string;
  /** Recipient: the tenant owner's e-mail. */
  email: string;
  /** Workspace slug shown in the e-mail. */
  workspace: string;
}

export interface WelcomeEmailResult {
  /** Message id the notifications service assigned (or the one it sent before, for a repeat). */
  messageId: string;
  /** True when the notifications service had already sent this e-mail (idempotent repeat). */
  duplicate: boolean;
}

export const welcomeWorkflowId = (tenant: string, n: number) => `welcome:${tenant}:${n}`;

/**
 * The support chat room of a tenant (§2.3): `support-<subdomain>-<projectId padded>`. The project
 * id is zero-padded to 6 digits (`support-acme-000042`) so rooms sort by project in the chat's
 * channel list; a longer id is kept whole, never cut. With a subdomain of at most 30 characters
 * the name stays far below Mattermost's 64-character limit for channel names.
 */
export const chatRoomName = (subdomain: string, projectId: number): string =>
  `support-${subdomain}-${String(projectId).padStart(6, '0')}`;

/** CloudEvent type emitted once a tenant is Ready (§3.2, §6). */
export const CLIENT_PROVISIONED = 'client.provisioned';

/** The `data` of a `client.provisioned` CloudEvent. */
export interface ClientProvisionedData {
  /** TenantClient name (= subdomain). */
  tenant: string;
  /** Display name of the workspace entry; defaults to the tenant name. */
  workspace?: string;
  projectId?: number;
  ownerEmail: string;
  ownerName: string;
  tier: Tier;
  erpVersion: ErpVersion;
}

/** Business failures that are not worth retrying. */
export const ErrorType = {
  NotificationRejected: 'NotificationRejected',
} as const;

// ---- the tenant lifecycle (workflows/tenant-lifecycle) ----

export const tenantWorkflowId = (name: string) => `tenant:${name}`;

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


export interface BackupTenantInput {
  tenant: string;
  tier: Tier;
  /** The tenant database (= tenant hostname). */
  database: string;
}

export const BACKUP_RETENTION_SCHEDULE_ID = 'backup-retention';

// ---- service-key rotation (workflows/rotate-service-key.ts) ----

export const rotationWorkflowId = (caller: string, target: string, n: number) => `rotate:${caller}:${target}:${n}`;
/** The annual rotation schedule of a pair. */
export const rotationScheduleId = (caller: string, target: string) => `rotate-annual:${caller}:${target}`;

export type RotationReason = 'annual' | 'exposure' | 'manual';

/** The durations a rotation runs with (from the configuration at start), in ms. */
export interface RotationSettings {
  /** After registering the new key pending: wait before the consumer gets it (targets' reload). */
  acceptWaitMs: number;
  /** The old key must be silent this long in the target's usage records. */
  quietPeriodMs: number;
  pollIntervalMs: number;
  /** From the hand-over to the consumer: roll back when it has not switched by then. */
  deadlineMs: number;
  /** On roll-back: wait before revoking the new key (consumers' secret cache TTL). */
  rollbackWaitMs: number;
  /** Shorter activity retry intervals (tests). */
  retryIntervals?: { initialMs: number; maximumMs: number };
  /**
   * `holders` pairs: the longest a process holding the key can stay silent in the target's records
   * (two heartbeats plus the usage flush). Their quiet period is at least this; and an old key used
   * this close before the switch had a holder, which must then show up on the new key.
   */
  holderWindowMs?: number;
  /**
   * `exposure` rotations (docs/operators.md "Service keys", "Switch proof"): how long after the switch every running holder
   * has announced the new version (a secret-cache tick) and its target has written that down (a
   * usage flush). Once the consumer has proved the switch and this has passed, the old key dies,
   * whatever it is still used for (after an exposure, that use may be the attacker's). Absent
   * (rotations started before it): the annual rule.
   */
  exposureNoticeMs?: number;
  /** `exposure` rotations: how often the usage records are read (a usage flush). */
  exposurePollMs?: number;
}

/** Key ids and versions only: a rotation's input, result and history never hold a key. */
export interface RotationInput {
  caller: string;
  target: string;
  n: number;
  reason: RotationReason;
  settings: RotationSettings;
  /** How the consumer proves the switch (domain/service-keys/inventory.ts); absent (before it existed): `calls`. */
  proof?: SwitchProof;
}

export interface RotationResult {
  outcome: 'completed' | 'rolled-back';
  oldKeyId: string;
  newKeyId: string;
  /** Why it rolled back. */
  message?: string;
}

/** CloudEvent type raised when a rotation rolls back. */
export const SERVICE_KEY_ROTATION_FAILED = 'service-key.rotation-failed';

// ---- dunning (domain/billing): a workspace whose payment failed ----

/** One workflow per run of failed payments of a workspace: `dunning:<workspace>:<n>`. */
export const dunningWorkflowId = (workspace: string, n: number) => `dunning:${workspace}:${n}`;

export interface DunningInput {
  workspaceId: string;
  /** The workspace's slug (for the e-mails and the search attribute). */
  workspace: string;
  /** Which run of failed payments of the workspace this is (subscriptions.dunning_count). */
  run: number;
  /** When this run of failed payments began (subscriptions.past_due_since, ISO). */
  pastDueSince: string;
  /** The invoice whose payment failed first. */
  invoiceId: string;
  /** How long the workspace may pay before it is suspended (BILLING_GRACE_PERIOD). */
  graceMs: number;
}

export type DunningOutcome = 'paid-within-grace' | 'paid-after-suspension' | 'cancelled' | 'settled-before-suspension';

/** The payment came in (invoice.paid) or the subscription ended: the dunning run is over. */
export const dunningSettledSignal = defineSignal<[{ reason: 'paid' | 'cancelled' }]>('settled');

export interface DunningStatus {
  step: 'notified' | 'in-grace' | 'suspended' | 'settled';
  suspendAt: string;
}
export const dunningStatusQuery = defineQuery<DunningStatus>('status');
// ---- webhook delivery (workflows/webhook-delivery.ts) ----

/** One delivery's retries: `webhook:<endpointId>:<messageId>` (replays reuse it once the earlier run closed). */
export const webhookWorkflowId = (endpointId: string, messageId: string) => `webhook:${endpointId}:${messageId}`;

/** The attempt outcomes (domain/webhooks/sender.ts). */
export type WebhookOutcome = 'ok' | 'gone' | 'redirect' | 'http-status' | 'timeout' | 'connection' | 'forbidden-address' | 'endpoint-disabled';

export interface WebhookAttemptSummary {
  outcome: WebhookOutcome;
  statusCode: number | null;
  retryAfterMs: number | null;
  error: string | null;
  /** The endpoint was disabled by this attempt (410, or failing too long): stop. */
  endpointDisabled?: boolean;
}

export interface WebhookRetrySettings {
  /** ms between attempts after the first; its length is the number of retries. */
  scheduleMs: number[];
  /** ± fraction applied to each delay (0.2 = ± 20 %). */
  jitter: number;
  retryAfterMinMs: number;
  retryAfterMaxMs: number;
  /** After a 429 or a timeout the wait is at least this. */
  slowDownMinMs: number;
}

export interface WebhookDeliveryInput {
  endpointId: string;
  messageId: string;
  workspaceId: string;
  eventType: string;
  settings: WebhookRetrySettings;
  /** The first attempt the dispatcher made (absent: attempt at once, e.g. a replay or a swept delivery). */
  firstAttempt?: WebhookAttemptSummary;
  /**
   * The wait before the first retry, when the run was started with it as its `startDelay` (the
   * server holds the run until then, so the wait costs no workflow task); absent: the workflow waits itself.
   */
  firstDelayMs?: number;
  trigger: 'retry' | 'replay';
}

/** How long to wait before retry `n` (0-based) after `last`; undefined once the schedule is spent. */
export function retryDelay(settings: WebhookRetrySettings, n: number, last: WebhookAttemptSummary, random: () => number): number | undefined {
  const base = settings.scheduleMs[n];
  if (base === undefined) return undefined;
  let delay = base * (1 + settings.jitter * (2 * random() - 1));
  if (last.retryAfterMs !== null) delay = Math.min(Math.max(last.retryAfterMs, settings.retryAfterMinMs), settings.retryAfterMaxMs);
  if (last.statusCode === 429 || last.outcome === 'timeout') delay = Math.max(delay, settings.slowDownMinMs);
  return Math.round(delay);
}

export interface WebhookDeliveryResult {
  status: 'delivered' | 'failed' | 'endpoint-disabled';
  attempts: number;
}
