/**
 * What the dispatcher, the worker and the API share to send and to hand a delivery to Temporal:
 * the sender built from configuration, the retry settings, starting a delivery's retry workflow,
 * and replay.
 */
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Pool } from 'pg';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import { retryDelay, type WebhookAttemptSummary, type WebhookRetrySettings } from './retry-schedule.js';
import {
  WEBHOOK_DELIVERY_WORKFLOW,
  WEBHOOK_ENDPOINT_RETRIES_WORKFLOW,
  WEBHOOK_RETRY_DUE_SIGNAL,
  webhookEndpointRetriesId,
  webhookWorkflowId,
  type WebhookDeliveryInput,
  type WebhookDeliveryWorkflow,
  type WebhookEndpointRetriesWorkflow,
  type WebhookRetryDue,
} from './workflow-contract.js';
import type { EndpointToWake } from './retry-queue.js';
import { AddressPolicy } from './addresses.js';
import { WebhookSender } from './http-sender.js';

export const addressPolicy = (config: Config) => new AddressPolicy(config.WEBHOOK_ALLOWED_ADDRESSES);

export function webhookSender(config: Config): WebhookSender {
  const dnsServers = config.WEBHOOK_DNS_SERVERS.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return new WebhookSender({
    policy: addressPolicy(config),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    dnsServers,
    maxSocketsPerHost: config.WEBHOOK_ENDPOINT_CONCURRENCY * 2,
  });
}

export const retrySettings = (config: Config): WebhookRetrySettings => ({
  scheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
  jitter: config.WEBHOOK_RETRY_JITTER,
  retryAfterMinMs: config.WEBHOOK_RETRY_AFTER_MIN,
  retryAfterMaxMs: config.WEBHOOK_RETRY_AFTER_MAX,
  slowDownMinMs: config.WEBHOOK_SLOW_DOWN_MIN,
});

export interface RetryStarter {
  temporal: Client;
  taskQueue: string;
  config: Config;
}

/**
 * Starts the retry workflow of one delivery; true when started, false when one runs already
 * (idempotent: the workflow id is the delivery's business id).
 */
export async function startRetry(
  s: RetryStarter,
  d: {
    endpointId: string;
    messageId: string;
    workspaceId: string;
    /** The workspace's slug (the `Workspace` search attribute; null: the workspace is gone); the input keeps only the id. */
    workspace: string | null;
    eventType: string;
    firstAttempt?: WebhookAttemptSummary;
    /** When the first attempt failed (epoch ms): the first retry's wait counts from then. */
    failedAt?: number;
    trigger: 'retry' | 'replay';
  },
): Promise<boolean> {
  const settings = retrySettings(s.config);
  // after a failed first attempt the run starts after the first retry's wait (± jitter) from the
  // failure: the server holds it durably, no workflow task runs before then (a 410 ends it at once)
  const { failedAt, workspace, ...rest } = d;
  const firstDelayMs =
    d.firstAttempt && d.firstAttempt.outcome !== 'gone'
      ? retryDelay(settings, 0, d.firstAttempt, Math.random)
      : undefined;
  const startDelay =
    firstDelayMs !== undefined ? Math.max(0, firstDelayMs - (failedAt !== undefined ? Date.now() - failedAt : 0)) : 0;
  const input: WebhookDeliveryInput = { ...rest, settings, ...(firstDelayMs !== undefined ? { firstDelayMs } : {}) };
  try {
    await s.temporal.workflow.start<WebhookDeliveryWorkflow>(WEBHOOK_DELIVERY_WORKFLOW, {
      workflowId: webhookWorkflowId(d.endpointId, d.messageId),
      taskQueue: s.taskQueue,
      args: [input],
      ...(startDelay > 0 ? { startDelay } : {}),
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        ...(workspace !== null ? [{ key: searchAttributes.workspace, value: workspace }] : []),
        { key: searchAttributes.workspaceId, value: d.workspaceId },
        { key: searchAttributes.webhookEndpoint, value: d.endpointId },
        { key: searchAttributes.eventType, value: d.eventType },
      ],
      staticSummary: `Webhook ${d.eventType} ${d.messageId} → endpoint ${d.endpointId} (${d.trigger})`,
    });
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Tells the endpoint's retry workflow (`webhook-endpoint-retries-<endpointId>`) that a delivery
 * waiting on its schedule is due at `dueAt`, starting the workflow when none runs (signal-with-start:
 * one call either way). The deliveries themselves are in PostgreSQL (next_attempt_at) already.
 */
export async function wakeEndpointRetries(s: RetryStarter, e: EndpointToWake, dueAt: number): Promise<void> {
  await s.temporal.workflow.signalWithStart<WebhookEndpointRetriesWorkflow, [WebhookRetryDue]>(
    WEBHOOK_ENDPOINT_RETRIES_WORKFLOW,
    {
      workflowId: webhookEndpointRetriesId(e.endpointId),
      taskQueue: s.taskQueue,
      args: [{ endpointId: e.endpointId }],
      signal: WEBHOOK_RETRY_DUE_SIGNAL,
      signalArgs: [{ dueAt }],
      typedSearchAttributes: [
        ...(e.workspace !== null ? [{ key: searchAttributes.workspace, value: e.workspace }] : []),
        { key: searchAttributes.workspaceId, value: e.workspaceId },
        { key: searchAttributes.webhookEndpoint, value: e.endpointId },
      ],
      staticSummary: `Webhook retries → endpoint ${e.endpointId}`,
    },
  );
}

/** What a time-range replay answers, so an empty `replayed` is not read as "nothing was sent". */
export const RANGE_REPLAY_NOTE =
  'A time range replays only messages whose delivery failed (retries used up); delivered and still-retrying ones are left alone. Replay one message by its id to send it again.';

/**
 * Replays one message, or every failed message of an endpoint created in [since, until): each gets
 * a new run of its delivery workflow that attempts at once. Answers the message ids replayed (and,
 * for a range, the note that only failed messages are).
 */
export async function replay(
  pool: Pool,
  s: RetryStarter,
  endpointId: string,
  what: { messageId: string } | { since: Date; until: Date },
): Promise<{ replayed: string[]; inProgress: string[]; note?: string }> {
  const { rows } = await pool.query<{
    message_id: string;
    workspace_id: string;
    workspace: string | null;
    event_type: string;
  }>(
    `SELECT d.message_id, d.workspace_id, w.slug AS workspace, m.event_type
       FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id LEFT JOIN workspaces w ON w.id = d.workspace_id
      WHERE d.endpoint_id = $1 AND ${'messageId' in what ? 'd.message_id = $2' : `d.status = 'failed' AND d.created_at >= $2 AND d.created_at < $3`}
      ORDER BY d.created_at LIMIT 10000`,
    'messageId' in what ? [endpointId, what.messageId] : [endpointId, what.since, what.until],
  );
  if ('messageId' in what && rows.length === 0)
    throw new AppError('NOT_FOUND', `No message ${what.messageId} was sent to this endpoint.`);
  const replayed: string[] = [];
  const inProgress: string[] = [];
  for (const r of rows) {
    const started = await startRetry(s, {
      endpointId,
      messageId: r.message_id,
      workspaceId: r.workspace_id,
      workspace: r.workspace,
      eventType: r.event_type,
      trigger: 'replay',
    });
    if (started) {
      await pool.query(
        `UPDATE webhook_deliveries SET status = 'retrying', replays = replays + 1, updated_at = now() WHERE endpoint_id = $1 AND message_id = $2`,
        [endpointId, r.message_id],
      );
      replayed.push(r.message_id);
    } else inProgress.push(r.message_id);
  }
  return 'messageId' in what ? { replayed, inProgress } : { replayed, inProgress, note: RANGE_REPLAY_NOTE };
}
