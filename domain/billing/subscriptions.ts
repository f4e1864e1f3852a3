/**
 * A workspace's subscription and invoices as the payment provider (Stripe) last reported them
 * (stripe-events.ts writes them), read by the portal and billing routes, and the workspace's
 * standing (suspended or not) that the Workspace API's key check reads. Amounts are integers in
 * the currency's smallest unit (cents), as Stripe gives them; currencies lower-case ISO 4217.
 */
import type { Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Tier } from '../tenants/types.js';

export const SUBSCRIPTION_STATUSES = [
  'trialing',
  'active',
  'past_due',
  'unpaid',
  'canceled',
  'incomplete',
  'incomplete_expired',
  'paused',
] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'uncollectible', 'void'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export interface SubscriptionRow {
  workspace_id: string;
  tier: Tier;
  status: SubscriptionStatus;
  seats: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
  provider_customer_id: string | null;
  provider_subscription_id: string | null;
  unit_amount: string | null;
  currency: string | null;
  past_due_since: Date | null;
  dunning_count: number;
  suspended_at: Date | null;
  provider_updated_at: Date | null;
}

export interface InvoiceRow {
  id: string;
  workspace_id: string;
  number: string | null;
  status: InvoiceStatus;
  currency: string;
  amount_due: string;
  amount_paid: string;
  amount_remaining: string;
  period_start: Date | null;
  period_end: Date | null;
  hosted_invoice_url: string | null;
  invoice_pdf: string | null;
  attempt_count: number;
  next_payment_attempt: Date | null;
  created_at: Date;
}

export interface SubscriptionView {
  workspace: string;
  tier: Tier;
  status: SubscriptionStatus;
  seats: number;
  currentPeriod: { start: string; end: string } | null;
  cancelAtPeriodEnd: boolean;
  /** Payment failed and not yet made good: since when; the workspace is suspended once the grace period is over. */
  pastDueSince: string | null;
  suspendedAt: string | null;
  /** What the next invoice will ask for: seats × the price per seat, due at the period's end. None for an ended subscription. */
  nextInvoice: { date: string; amountDue: number; currency: string } | null;
  provider: { name: 'stripe'; customerId: string | null; subscriptionId: string | null };
}

export interface InvoiceView {
  id: string;
  number: string | null;
  status: InvoiceStatus;
  currency: string;
  amountDue: number;
  amountPaid: number;
  amountRemaining: number;
  period: { start: string | null; end: string | null };
  hostedInvoiceUrl: string | null;
  invoicePdf: string | null;
  attemptCount: number;
  nextPaymentAttempt: string | null;
  createdAt: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export async function findSubscription(
  db: Queryable,
  workspaceId: string,
  lock = false,
): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT * FROM subscriptions WHERE workspace_id = $1${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId],
  );
  return rows[0];
}

export function subscriptionView(workspace: string, row: SubscriptionRow): SubscriptionView {
  const ended = row.status === 'canceled' || row.status === 'incomplete_expired' || row.cancel_at_period_end;
  return {
    workspace,
    tier: row.tier,
    status: row.status,
    seats: row.seats,
    currentPeriod:
      row.current_period_start && row.current_period_end
        ? { start: iso(row.current_period_start)!, end: iso(row.current_period_end)! }
        : null,
    cancelAtPeriodEnd: row.cancel_at_period_end,
    pastDueSince: iso(row.past_due_since),
    suspendedAt: iso(row.suspended_at),
    nextInvoice:
      !ended && row.current_period_end && row.unit_amount !== null && row.currency
        ? {
            date: row.current_period_end.toISOString(),
            amountDue: Number(row.unit_amount) * row.seats,
            currency: row.currency,
          }
        : null,
    provider: { name: 'stripe', customerId: row.provider_customer_id, subscriptionId: row.provider_subscription_id },
  };
}

export async function getSubscription(
  db: Queryable,
  workspace: { id: string; slug: string },
): Promise<SubscriptionView> {
  const row = await findSubscription(db, workspace.id);
  if (!row) throw new AppError('NOT_FOUND', `Workspace "${workspace.slug}" has no subscription yet.`);
  return subscriptionView(workspace.slug, row);
}

function invoiceView(row: InvoiceRow): InvoiceView {
  return {
    id: row.id,
    number: row.number,
    status: row.status,
    currency: row.currency,
    amountDue: Number(row.amount_due),
    amountPaid: Number(row.amount_paid),
    amountRemaining: Number(row.amount_remaining),
    period: { start: iso(row.period_start), end: iso(row.period_end) },
    hostedInvoiceUrl: row.hosted_invoice_url,
    invoicePdf: row.invoice_pdf,
    attemptCount: row.attempt_count,
    nextPaymentAttempt: iso(row.next_payment_attempt),
    createdAt: row.created_at.toISOString(),
  };
}

/** The workspace's invoices, newest first; `before`: an invoice id, for the next page. */
export async function listInvoices(
  db: Queryable,
  workspaceId: string,
  opts: { limit: number; before?: string },
): Promise<InvoiceView[]> {
  const { rows } = await db.query<InvoiceRow>(
    `SELECT * FROM invoices i
      WHERE workspace_id = $1
        AND ($3::text IS NULL OR (created_at, id) < (SELECT created_at, id FROM invoices WHERE id = $3 AND workspace_id = $1))
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    [workspaceId, opts.limit, opts.before ?? null],
  );
  return rows.map(invoiceView);
}

/** One invoice of the workspace; another workspace's invoice is as unknown as a missing one (404). */
export async function getInvoice(db: Queryable, workspaceId: string, id: string): Promise<InvoiceView> {
  const { rows } = await db.query<InvoiceRow>('SELECT * FROM invoices WHERE id = $1 AND workspace_id = $2', [
    id,
    workspaceId,
  ]);
  if (!rows[0]) throw new AppError('NOT_FOUND', `Invoice "${id}" does not exist in this workspace.`);
  return invoiceView(rows[0]);
}

/**
 * The dunning workflow's suspension, once its grace period is over: only when the same run of
 * failed payments (`run`) is still unpaid (a payment recorded meanwhile cleared `past_due_since`). True
 * when the workspace is suspended afterwards.
 */
export async function suspendIfStillUnpaid(db: Queryable, workspaceId: string, run: number): Promise<boolean> {
  const { rows } = await db.query<{ suspended: boolean }>(
    `UPDATE subscriptions SET suspended_at = coalesce(suspended_at, now()), updated_at = now()
      WHERE workspace_id = $1 AND dunning_count = $2 AND past_due_since IS NOT NULL
      RETURNING true AS suspended`,
    [workspaceId, run],
  );
  return rows.length === 1;
}

/** The admins of a workspace (the dunning e-mails' recipients). */
export async function workspaceAdmins(
  db: Queryable,
  workspaceId: string,
): Promise<{ id: string; email: string; name: string }[]> {
  const { rows } = await db.query<{ id: string; email: string; name: string }>(
    `SELECT u.id, u.email, u.name FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.workspace_id = $1 AND m.role = 'admin' ORDER BY u.email`,
    [workspaceId],
  );
  return rows;
}

/** The TenantClient behind a workspace (a provisioned tenant's workspace has the tenant's name as slug). */
export async function tenantOfWorkspace(
  db: Queryable,
  workspace: { id: string; slug: string },
): Promise<string | undefined> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.name FROM tenant_status c
      WHERE c.name IN (SELECT t.name FROM tenants t WHERE t.workspace_id = $1) OR c.name = $2
      ORDER BY (c.name = $2) LIMIT 1`,
    [workspace.id, workspace.slug],
  );
  return rows[0]?.name;
}
