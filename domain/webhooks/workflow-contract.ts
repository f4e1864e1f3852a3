/**
 * The webhook delivery workflow as its starters see it (the implementation:
 * workflows/webhook-delivery.ts): type name, id, input and result. One run per delivery's retries
 * (message × endpoint). No Node built-ins: bundled into the workflow sandbox too.
 */
import type { WebhookAttemptSummary, WebhookRetrySettings } from './retry-schedule.js';

export type { WebhookAttemptSummary, WebhookOutcome, WebhookRetrySettings } from './retry-schedule.js';

/** The workflow type `webhookDelivery` is registered under. */
export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDelivery';

/** One delivery's retries: `webhook:<endpointId>:<messageId>` (replays reuse it once the earlier run closed). */
export const webhookWorkflowId = (endpointId: string, messageId: string) => `webhook:${endpointId}:${messageId}`;

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

export interface WebhookDeliveryResult {
  status: 'delivered' | 'failed' | 'endpoint-disabled';
  attempts: number;
}

/** The signature the workflow implements (checked in workflows/index.ts); typed starts use it. */
export type WebhookDeliveryWorkflow = (input: WebhookDeliveryInput) => Promise<WebhookDeliveryResult>;

/** The retries of every delivery of one endpoint that waits on the endpoint's schedule (webhook_deliveries.next_attempt_at). */
export const WEBHOOK_ENDPOINT_RETRIES_WORKFLOW = 'webhookEndpointRetries';

/** One endpoint's retries: `webhook-endpoint-retries-<endpointId>` (a new run once the last one ended). */
export const webhookEndpointRetriesId = (endpointId: string) => `webhook-endpoint-retries-${endpointId}`;

/** The signal that tells the endpoint's workflow a delivery is due at `dueAt` (epoch ms): it wakes then at the latest. */
export const WEBHOOK_RETRY_DUE_SIGNAL = 'due';
export interface WebhookRetryDue {
  dueAt: number;
}

export interface WebhookEndpointRetriesInput {
  endpointId: string;
  /** The earliest due time known when the run started (carried over a continue-as-new). */
  dueAt?: number;
}

export interface WebhookEndpointRetriesResult {
  /** `drained`: nothing waits any more; `endpoint-disabled`: the endpoint was disabled or deleted, its waiting messages failed. */
  status: 'drained' | 'endpoint-disabled';
  /** Attempts made by this run, delivered ones, and messages failed for good. */
  attempts: number;
  delivered: number;
  failed: number;
}

export type WebhookEndpointRetriesWorkflow = (
  input: WebhookEndpointRetriesInput,
) => Promise<WebhookEndpointRetriesResult>;
