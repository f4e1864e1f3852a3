/**
 * invoice.* events: the invoice row; a payment clears past due (lifting a suspension at once) and
 * settles the dunning run; the first failed payment of a run starts one.
 */
import type Stripe from 'stripe';
import { cloudEvent } from '../events/events.js';
import { clearDunning, startDunning } from './dunning-runs.js';
import {
  EVENT_SOURCE,
  idOf,
  resolveWorkspace,
  toDate,
  type BillingDeps,
  type Db,
  type EventOutcome,
  type Workspace,
} from './stripe-event-context.js';
import { findSubscription, type SubscriptionRow } from './subscriptions.js';

/** An invoice event with its workspace, for the steps that follow on it. */
interface InvoiceEvent {
  event: Stripe.Event;
  invoice: Stripe.Invoice & { id: string };
  workspace: Workspace;
}

export async function invoiceChanged(
  deps: BillingDeps,
  db: Db,
  event: Stripe.Event,
  invoice: Stripe.Invoice,
): Promise<EventOutcome> {
  const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription ?? null);
  const customer = idOf(invoice.customer);
  const slug = invoice.parent?.subscription_details?.metadata?.workspace ?? invoice.metadata?.workspace;
  const workspace = await resolveWorkspace(db, { subscription: subscriptionId, customer, slug });
  if (!workspace) return { outcome: `ignored: invoice ${invoice.id} belongs to no workspace` };
  if (!invoice.id) return { outcome: 'ignored: an invoice without id (a preview)', workspace };

  const e: InvoiceEvent = { event, invoice: invoice as InvoiceEvent['invoice'], workspace };
  await upsertInvoice(db, e);
  const sub = await findSubscription(db, workspace.id, true);
  let outcome = `invoice ${invoice.id} ${invoice.status ?? ''}`.trim();
  if (event.type === 'invoice.paid' && sub) outcome += await invoicePaid(deps, db, e, sub);
  else if (event.type === 'invoice.payment_failed' && sub) outcome += await paymentFailed(deps, db, e, sub);
  else if (!sub) outcome += '; the workspace has no subscription on record';
  return { outcome, workspace };
}

async function upsertInvoice(db: Db, { event, invoice, workspace }: InvoiceEvent): Promise<void> {
  const line = invoice.lines?.data?.[0];
  await db.query(
    `INSERT INTO invoices (id, workspace_id, number, status, currency, amount_due, amount_paid, amount_remaining, period_start, period_end,
                           hosted_invoice_url, invoice_pdf, attempt_count, next_payment_attempt, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (id) DO UPDATE SET
       number = EXCLUDED.number, status = EXCLUDED.status, amount_due = EXCLUDED.amount_due, amount_paid = EXCLUDED.amount_paid,
       amount_remaining = EXCLUDED.amount_remaining, period_start = EXCLUDED.period_start, period_end = EXCLUDED.period_end,
       hosted_invoice_url = EXCLUDED.hosted_invoice_url, invoice_pdf = EXCLUDED.invoice_pdf, attempt_count = EXCLUDED.attempt_count,
       next_payment_attempt = EXCLUDED.next_payment_attempt, updated_at = now()
     WHERE invoices.workspace_id = EXCLUDED.workspace_id`,
    [
      invoice.id,
      workspace.id,
      invoice.number ?? null,
      invoice.status ?? (event.type === 'invoice.paid' ? 'paid' : 'open'),
      invoice.currency.toLowerCase(),
      invoice.amount_due,
      invoice.amount_paid ?? 0,
      invoice.amount_remaining ?? 0,
      toDate(line?.period?.start ?? invoice.period_start),
      toDate(line?.period?.end ?? invoice.period_end),
      invoice.hosted_invoice_url ?? null,
      invoice.invoice_pdf ?? null,
      invoice.attempt_count ?? 0,
      toDate(invoice.next_payment_attempt),
      toDate(invoice.created) ?? new Date(event.created * 1000),
    ],
  );
}

/** Past due cleared, a suspension lifted at once, dunning settled; answers what to add to the outcome. */
async function invoicePaid(deps: BillingDeps, db: Db, e: InvoiceEvent, sub: SubscriptionRow): Promise<string> {
  const hadSuspension = sub.suspended_at !== null;
  await db.query(
    `UPDATE subscriptions SET past_due_since = NULL, suspended_at = NULL,
            status = CASE WHEN status IN ('past_due', 'unpaid') THEN 'active' ELSE status END, updated_at = now()
      WHERE workspace_id = $1`,
    [e.workspace.id],
  );
  await clearDunning(deps, db, e.workspace, sub, 'paid');
  await publishInvoiceEvent(deps, e, hadSuspension ? 'billing.workspace.reinstated' : 'billing.invoice.paid');
  return hadSuspension ? '; suspension lifted' : '';
}

/** The first failure of a run marks the subscription past due and starts dunning; answers what to add to the outcome. */
async function paymentFailed(deps: BillingDeps, db: Db, e: InvoiceEvent, sub: SubscriptionRow): Promise<string> {
  let outcome: string;
  if (sub.past_due_since) {
    outcome = '; dunning already under way';
  } else {
    const { rows } = await db.query<{ past_due_since: Date; dunning_count: number }>(
      `UPDATE subscriptions SET past_due_since = now(), dunning_count = dunning_count + 1,
              status = CASE WHEN status IN ('active', 'trialing') THEN 'past_due' ELSE status END, updated_at = now()
        WHERE workspace_id = $1 RETURNING past_due_since, dunning_count`,
      [e.workspace.id],
    );
    const run = rows[0]!;
    const workflowId = await startDunning(deps, e.workspace, {
      run: run.dunning_count,
      input: {
        workspaceId: e.workspace.id,
        workspace: e.workspace.slug,
        run: run.dunning_count,
        pastDueSince: run.past_due_since.toISOString(),
        invoiceId: e.invoice.id,
        graceMs: deps.config.BILLING_GRACE_PERIOD,
      },
    });
    outcome = `; dunning started (${workflowId})`;
  }
  await publishInvoiceEvent(deps, e, 'billing.invoice.payment_failed');
  return outcome;
}

function publishInvoiceEvent(deps: BillingDeps, { event, invoice, workspace }: InvoiceEvent, type: string) {
  return deps.publish(
    cloudEvent({
      id: event.id,
      source: EVENT_SOURCE,
      type,
      subject: workspace.slug,
      data: {
        workspace: workspace.slug,
        invoice: invoice.id,
        status: invoice.status,
        amountDue: invoice.amount_due,
        amountPaid: invoice.amount_paid,
        currency: invoice.currency,
      },
    }),
  );
}
