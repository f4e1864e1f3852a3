/**
 * The webhook retry workflow as its starters see it (the implementation:
 * workflows/webhook-endpoint-retries.ts): type name, id, signal, input and result. One run per
 * endpoint with deliveries waiting on its retry schedule (webhook_deliveries.next_attempt_at). No
 * Node built-ins: bundled into the workflow sandbox too.
 */

/** The workflow type `webhookEndpointRetries` is registered under. */
export const WEBHOOK_ENDPOINT_RETRIES_WORKFLOW = 'webhookEndpointRetries';

/** One endpoint's retries: `webhook-endpoint-retries-<endpointId>` (a new run once the last one ended). */
export const webhookEndpointRetriesId = (endpointId: string) => `webhook-endpoint-retries-${endpointId}`;

/** The signal that tells the endpoint's workflow a delivery is due at `dueAt` (epoch ms): it wakes then at the latest. */
export const WEBHOOK_RETRY_DUE_SIGNAL = 'due';
export interface WebhookRetryDue {
  dueAt: number;
  /** The receiver answered this message's first attempt 410 Gone: the run disables the endpoint and ends. */
  goneMessageId?: string;
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
