/**
 * The payment provider's webhooks (Stripe, §4.1 `POST /api/webhooks/stripe`): verification with
 * the official `stripe` library, and each event processed once, however often Stripe sends it.
 *
 * One transaction per event: its id goes into `billing_events` first (a repeat finds it there and
 * changes nothing), then the subscription or invoice rows, then what follows on other parts of the
 * platform, all idempotent: the TenantClient's tier (generation + 1, DESIGN §5), the tenant's cancel
 * (soak period) or reactivation (tenant workflow updates), the dunning workflow, and a CloudEvent
 * on the events stream. When any of it fails the transaction rolls back and the endpoint answers
 * 500, so Stripe delivers the event again and it is processed whole or not at all.
 * The handlers: subscription-events.ts and invoice-events.ts (dunning runs: dunning-runs.ts).
 *
 * | event                                    | effect                                                            |
 * |------------------------------------------|-------------------------------------------------------------------|
 * | customer.subscription.created / updated  | subscription row; tier change → TenantClient tier; canceled → active again → tenant reactivated |
 * | customer.subscription.deleted            | status canceled; the tenant is cancelled (its soak period starts); dunning ends |
 * | invoice.paid                             | invoice row; past due cleared, a suspension lifted at once, dunning ends |
 * | invoice.payment_failed                   | invoice row; the first failure of a run starts dunning:<workspace>:<n> |
 * | invoice.finalized / updated / voided / marked_uncollectible | invoice row                                     |
 */
import Stripe from 'stripe';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { invoiceChanged } from './invoice-events.js';
import type { BillingDeps, Db, EventOutcome } from './stripe-event-context.js';
import { subscriptionChanged } from './subscription-events.js';

export { EVENT_SOURCE, type BillingDeps } from './stripe-event-context.js';

/**
 * The event, if `signature` (the `Stripe-Signature` header) signs exactly `rawBody` with the
 * endpoint's secret within the tolerance; else 400 saying why (Stripe's own advice: a failed
 * verification is a 400, and the event is never looked at).
 */
export function verifyStripeEvent(
  rawBody: Buffer,
  signature: string | undefined,
  config: Pick<Config, 'STRIPE_WEBHOOK_SECRET' | 'STRIPE_WEBHOOK_TOLERANCE_SECONDS'>,
): Stripe.Event {
  if (!signature)
    throw new AppError(
      'BAD_REQUEST',
      'The Stripe-Signature header is missing: only events signed by Stripe are accepted.',
    );
  try {
    return Stripe.webhooks.constructEvent(
      rawBody,
      signature,
      config.STRIPE_WEBHOOK_SECRET,
      config.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
    );
  } catch (err) {
    const stale = /timestamp outside the tolerance zone/i.test((err as Error).message);
    throw new AppError(
      'BAD_REQUEST',
      stale
        ? `The event's signature timestamp is older than ${config.STRIPE_WEBHOOK_TOLERANCE_SECONDS} s: refused as a possible replay.`
        : 'The Stripe-Signature header does not match the body: the event is refused.',
    );
  }
}

export interface ProcessResult {
  /** True when this event id had been processed before: nothing was done again. */
  duplicate: boolean;
  outcome: string;
}

export async function processStripeEvent(deps: BillingDeps, event: Stripe.Event): Promise<ProcessResult> {
  return withTransaction(deps.pool, async (db) => {
    const claimed = await db.query(
      `INSERT INTO billing_events (id, type, created_at, outcome) VALUES ($1, $2, to_timestamp($3), 'processing')
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      [event.id, event.type, event.created],
    );
    if (claimed.rowCount === 0) {
      const seen = await db.query<{ outcome: string }>('SELECT outcome FROM billing_events WHERE id = $1', [event.id]);
      return { duplicate: true, outcome: seen.rows[0]?.outcome ?? 'processed before' };
    }
    const { outcome, workspace } = await handle(deps, db, event);
    await db.query('UPDATE billing_events SET outcome = $2, workspace_id = $3 WHERE id = $1', [
      event.id,
      outcome,
      workspace?.id ?? null,
    ]);
    return { duplicate: false, outcome };
  });
}

/** The handler of the event's kind; other kinds are recorded as ignored. */
async function handle(deps: BillingDeps, db: Db, event: Stripe.Event): Promise<EventOutcome> {
  switch (event.type) {
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
    case 'customer.subscription.paused':
    case 'customer.subscription.resumed':
      return subscriptionChanged(deps, db, event, event.data.object);
    case 'invoice.paid':
    case 'invoice.payment_failed':
    case 'invoice.finalized':
    case 'invoice.updated':
    case 'invoice.voided':
    case 'invoice.marked_uncollectible':
      return invoiceChanged(deps, db, event, event.data.object);
    default:
      return { outcome: `ignored: ${event.type} is not an event the platform acts on` };
  }
}
