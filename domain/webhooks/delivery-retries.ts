/**
 * What the dispatcher, the worker and the API share to send and to hand deliveries to Temporal:
 * the sender built from configuration, telling an endpoint's retry workflow (at once, or a few
 * failures per signal: RetryWaker), and replay.
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { Config } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import { AppError } from '../../lib/errors.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import {
  WEBHOOK_ENDPOINT_RETRIES_WORKFLOW,
  WEBHOOK_RETRY_DUE_SIGNAL,
  webhookEndpointRetriesId,
  type WebhookEndpointRetriesWorkflow,
  type WebhookRetryDue,
} from './workflow-contract.js';
import type { EndpointToWake } from './deliveries.js';
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

export interface RetryStarter {
  temporal: Client;
  taskQueue: string;
  config: Config;
}

/**
 * Tells the endpoint's retry workflow (`webhook-endpoint-retries-<endpointId>`) that a delivery
 * waiting on its schedule is due at `dueAt` (or that a first attempt was answered 410 Gone),
 * starting the workflow when none runs (signal-with-start: one call either way). The deliveries
 * themselves are in PostgreSQL (next_attempt_at) already.
 */
export async function wakeEndpointRetries(s: RetryStarter, e: EndpointToWake, due: WebhookRetryDue): Promise<void> {
  await s.temporal.workflow.signalWithStart<WebhookEndpointRetriesWorkflow, [WebhookRetryDue]>(
    WEBHOOK_ENDPOINT_RETRIES_WORKFLOW,
    {
      workflowId: webhookEndpointRetriesId(e.endpointId),
      taskQueue: s.taskQueue,
      args: [{ endpointId: e.endpointId }],
      signal: WEBHOOK_RETRY_DUE_SIGNAL,
      signalArgs: [due],
      typedSearchAttributes: [
        ...(e.workspace !== null ? [{ key: searchAttributes.workspace, value: e.workspace }] : []),
        { key: searchAttributes.workspaceId, value: e.workspaceId },
        { key: searchAttributes.webhookEndpoint, value: e.endpointId },
      ],
      staticSummary: `Webhook retries → endpoint ${e.endpointId}`,
    },
  );
}

/**
 * The dispatcher's RetryWaker tells endpoints' retry workflows when their next recorded failure
 * is due: the failures of one endpoint within FLUSH_AFTER_MS go in one
 * signal-with-start carrying the earliest due time, and none is sent while a due time already told
 * is earlier and still ahead (the workflow's run at that time finds the later ones in PostgreSQL).
 * A signal that fails is logged: the sweeper tells the workflow once the delivery is overdue.
 */
const FLUSH_AFTER_MS = 50;

export class RetryWaker {
  /** Per endpoint: the earliest due time told to its workflow that is still ahead. */
  private readonly told = new Map<string, number>();
  private readonly waiting = new Map<string, { endpoint: EndpointToWake; dueAt: number }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly starter: RetryStarter,
    private readonly log: Logger,
  ) {}

  /** A failure of `endpoint`, recorded with its next attempt due at `dueAt` (epoch ms). */
  due(endpoint: EndpointToWake, dueAt: number): void {
    const told = this.told.get(endpoint.endpointId);
    if (told !== undefined && told > Date.now() && told <= dueAt) return;
    const w = this.waiting.get(endpoint.endpointId);
    if (!w || dueAt < w.dueAt) this.waiting.set(endpoint.endpointId, { endpoint, dueAt });
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
  }

  /** Sends the signals waiting now. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.waiting.values()];
    this.waiting.clear();
    this.flushing = this.flushing.then(() =>
      Promise.all(
        batch.map(async ({ endpoint, dueAt }) => {
          try {
            await wakeEndpointRetries(this.starter, endpoint, { dueAt });
            const told = this.told.get(endpoint.endpointId);
            if (told === undefined || told <= Date.now() || dueAt < told) this.told.set(endpoint.endpointId, dueAt);
          } catch (err) {
            this.log.error(
              { err: (err as Error).message, endpointId: endpoint.endpointId },
              'could not tell the endpoint retry workflow; the sweeper will once the delivery is overdue',
            );
          }
        }),
      ).then(() => {}),
    );
    return this.flushing;
  }
}

/** What a time-range replay answers, so an empty `replayed` is not read as "nothing was sent". */
export const RANGE_REPLAY_NOTE =
  'A time range replays only messages whose delivery failed (retries used up); delivered and still-retrying ones are left alone. Replay one message by its id to send it again.';

/**
 * Replays one message, or every failed message of an endpoint created in [since, until): each goes
 * back on its endpoint's retry schedule, due now, with the whole schedule ahead of it, and the
 * endpoint's retry workflow is told. A delivery whose first attempt is still to be made (pending)
 * is in progress and left alone. Answers the message ids replayed (and, for a range, the note that
 * only failed messages are).
 */
export async function replay(
  pool: Pool,
  s: RetryStarter,
  endpointId: string,
  what: { messageId: string } | { since: Date; until: Date },
): Promise<{ replayed: string[]; inProgress: string[]; note?: string }> {
  const { rows } = await pool.query<{ message_id: string; status: string }>(
    `SELECT d.message_id, d.status FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND ${'messageId' in what ? 'd.message_id = $2' : `d.status = 'failed' AND d.created_at >= $2 AND d.created_at < $3`}
      ORDER BY d.created_at LIMIT 10000`,
    'messageId' in what ? [endpointId, what.messageId] : [endpointId, what.since, what.until],
  );
  if ('messageId' in what && rows.length === 0)
    throw new AppError('NOT_FOUND', `No message ${what.messageId} was sent to this endpoint.`);
  const { rows: replayed } = await pool.query<{ message_id: string; workspace_id: string; workspace: string | null }>(
    `WITH r AS (
       UPDATE webhook_deliveries SET status = 'retrying', next_attempt_at = now(), replayed_from = attempts,
              replays = replays + 1, updated_at = now()
        WHERE endpoint_id = $1 AND message_id = ANY($2::text[]) AND status <> 'pending'
        RETURNING message_id, workspace_id, created_at
     )
     SELECT r.message_id, r.workspace_id, w.slug AS workspace FROM r LEFT JOIN workspaces w ON w.id = r.workspace_id
      ORDER BY r.created_at`,
    [endpointId, rows.map((r) => r.message_id)],
  );
  const first = replayed[0];
  if (first)
    await wakeEndpointRetries(
      s,
      { endpointId, workspaceId: first.workspace_id, workspace: first.workspace },
      { dueAt: Date.now() },
    );
  const ids = new Set(replayed.map((r) => r.message_id));
  const result = {
    replayed: replayed.map((r) => r.message_id),
    inProgress: rows.map((r) => r.message_id).filter((id) => !ids.has(id)),
  };
  return 'messageId' in what ? result : { ...result, note: RANGE_REPLAY_NOTE };
}
