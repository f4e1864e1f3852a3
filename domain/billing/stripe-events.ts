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
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { cloudEvent, type CloudEvent } from '../events/events.js';
import { applyTenantClient, runTenantAction } from '../tenants/operator-actions.js';
import type { TenantClientSpec, Tier } from '../tenants/types.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import {
  DUNNING_WORKFLOW,
  dunningSettledSignal,
  dunningWorkflowId,
  type DunningInput,
  type DunWorkspaceWorkflow,
} from './workflow-contract.js';
import { isTier } from './tiers.js';
import {
  findSubscription,
  SUBSCRIPTION_STATUSES,
  tenantOfWorkspace,
  type SubscriptionRow,
  type SubscriptionStatus,
} from './subscriptions.js';

export const EVENT_SOURCE = '/plana/billing/stripe';

export interface BillingDeps {
  pool: pg.Pool;
  temporal: Client;
  config: Config;
  /** Publishes a CloudEvent through the events service (billing-webhooks → events). */
  publish: (event: CloudEvent) => Promise<unknown>;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

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

type Db = pg.PoolClient;
interface Workspace {
  id: string;
  slug: string;
}

const toDate = (s: number | null | undefined) => (typeof s === 'number' ? new Date(s * 1000) : null);
const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? null));

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

async function handle(
  deps: BillingDeps,
  db: Db,
  event: Stripe.Event,
): Promise<{ outcome: string; workspace?: Workspace }> {
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

async function workspaceBySlug(db: Db, slug: unknown): Promise<Workspace | undefined> {
  if (typeof slug !== 'string' || !slug) return undefined;
  return (await db.query<Workspace>('SELECT id, slug FROM workspaces WHERE slug = $1', [slug])).rows[0];
}

/** The workspace a Stripe object belongs to: by the subscription or customer we know, else `metadata.workspace` (the slug). */
async function resolveWorkspace(
  db: Db,
  ids: { subscription?: string | null; customer?: string | null; slug?: unknown },
): Promise<Workspace | undefined> {
  const { rows } = await db.query<Workspace>(
    `SELECT w.id, w.slug FROM subscriptions s JOIN workspaces w ON w.id = s.workspace_id
      WHERE s.provider_subscription_id = $1 OR s.provider_customer_id = $2
      ORDER BY (s.provider_subscription_id = $1) DESC NULLS LAST LIMIT 1`,
    [ids.subscription ?? null, ids.customer ?? null],
  );
  return rows[0] ?? (await workspaceBySlug(db, ids.slug));
}

async function subscriptionChanged(
  deps: BillingDeps,
  db: Db,
  event: Stripe.Event,
  sub: Stripe.Subscription,
): Promise<{ outcome: string; workspace?: Workspace }> {
  const customer = idOf(sub.customer);
  const workspace = await resolveWorkspace(db, { subscription: sub.id, customer, slug: sub.metadata?.workspace });
  if (!workspace)
    return {
      outcome: `ignored: subscription ${sub.id} belongs to no workspace (no known customer, no metadata.workspace)`,
    };

  const item = sub.items?.data?.[0];
  const tierName = item?.price?.lookup_key ?? sub.metadata?.tier;
  if (!isTier(tierName)) {
    // permanent: Stripe sending it again would not help; the operator fixes the price's lookup_key
    deps.log.error({ eventId: event.id, subscription: sub.id }, 'subscription price has no known tier as lookup_key');
    return {
      outcome: `ignored: subscription ${sub.id} has no tier (price lookup_key or metadata.tier must be starter, pro or enterprise)`,
      workspace,
    };
  }
  const tier: Tier = tierName;
  const status =
    event.type === 'customer.subscription.deleted'
      ? 'canceled'
      : (SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status)
        ? (sub.status as SubscriptionStatus)
        : undefined;
  if (!status)
    return { outcome: `ignored: subscription status "${sub.status}" is not one the platform knows`, workspace };

  const before = await findSubscription(db, workspace.id, true);
  const eventTime = new Date(event.created * 1000);
  if (before?.provider_updated_at && before.provider_updated_at > eventTime) {
    return { outcome: `stale: a newer subscription event was applied already`, workspace };
  }
  if (before?.provider_subscription_id && before.provider_subscription_id !== sub.id && status === 'canceled') {
    return {
      outcome: `ignored: ${sub.id} is not the workspace's current subscription (${before.provider_subscription_id})`,
      workspace,
    };
  }

  await db.query(
    `INSERT INTO subscriptions (workspace_id, tier, status, seats, current_period_start, current_period_end, cancel_at_period_end,
                                provider_customer_id, provider_subscription_id, unit_amount, currency, provider_updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (workspace_id) DO UPDATE SET
       tier = EXCLUDED.tier, status = EXCLUDED.status, seats = EXCLUDED.seats,
       current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
       cancel_at_period_end = EXCLUDED.cancel_at_period_end, provider_customer_id = EXCLUDED.provider_customer_id,
       provider_subscription_id = EXCLUDED.provider_subscription_id, unit_amount = EXCLUDED.unit_amount,
       currency = EXCLUDED.currency, provider_updated_at = EXCLUDED.provider_updated_at, updated_at = now()`,
    [
      workspace.id,
      tier,
      status,
      item?.quantity ?? 1,
      toDate(item?.current_period_start),
      toDate(item?.current_period_end),
      sub.cancel_at_period_end === true,
      customer,
      sub.id,
      item?.price?.unit_amount ?? null,
      (item?.price?.currency ?? sub.currency ?? null)?.toLowerCase() ?? null,
      eventTime,
    ],
  );

  const done: string[] = [`subscription ${status}, ${tier}`];
  const tenant = await tenantOfWorkspace(db, workspace);
  const wasCanceled = before?.status === 'canceled';
  const live = status === 'active' || status === 'trialing' || status === 'past_due';
  let published = 'billing.subscription.updated';

  if (status === 'canceled' && !wasCanceled) {
    published = 'billing.subscription.canceled';
    await clearDunning(deps, db, workspace, before, 'cancelled');
    if (tenant) done.push(await tenantAction(deps, tenant, 'cancel'));
  } else if (wasCanceled && live) {
    published = 'billing.subscription.reactivated';
    if (tenant) done.push(await tenantAction(deps, tenant, 'reactivate'));
  }
  if (tenant && live) {
    const changed = await changeTenantTier(deps, db, tenant, tier);
    if (changed) done.push(changed);
  }
  if (!tenant) done.push('no tenant behind the workspace');

  await deps.publish(
    cloudEvent({
      id: event.id,
      source: EVENT_SOURCE,
      type: published,
      subject: workspace.slug,
      data: {
        workspace: workspace.slug,
        tenant: tenant ?? null,
        tier,
        status,
        seats: item?.quantity ?? 1,
        subscription: sub.id,
        previousTier: before?.tier ?? null,
      },
    }),
  );
  return { outcome: done.join('; '), workspace };
}

/**
 * DESIGN §5: a tier change updates the TenantClient (generation + 1), and its reconcile brings the
 * tenant to the tier's module set. The same apply path as the ops API; the same tier again changes nothing.
 */
async function changeTenantTier(deps: BillingDeps, db: Db, tenant: string, tier: Tier): Promise<string | undefined> {
  const { rows } = await db.query<{ spec: TenantClientSpec; phase: string }>(
    'SELECT spec, phase FROM tenant_clients WHERE name = $1',
    [tenant],
  );
  const current = rows[0];
  if (!current || current.spec.tier === tier) return undefined;
  if (['Cancelled', 'Deprovisioning', 'Deprovisioned'].includes(current.phase))
    return `tenant ${tenant} is ${current.phase.toLowerCase()}: tier left at ${current.spec.tier}`;
  const applied = await applyTenantClient(deps, {
    apiVersion: 'plana.dev/v1alpha1',
    kind: 'TenantClient',
    metadata: { name: tenant },
    spec: { ...current.spec, tier },
  } as Parameters<typeof applyTenantClient>[1]);
  return `tenant ${tenant} tier ${current.spec.tier} → ${tier} (generation ${applied.generation})`;
}

/** The tenant workflow's cancel (soak period) or reactivate update; already in that state counts as done. */
async function tenantAction(deps: BillingDeps, tenant: string, action: 'cancel' | 'reactivate'): Promise<string> {
  try {
    await runTenantAction(deps, tenant, action);
    return action === 'cancel' ? `tenant ${tenant} cancelled (soak period started)` : `tenant ${tenant} reactivated`;
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'CONFLICT') throw err;
    if (action === 'cancel' && /already/.test(err.message)) return `tenant ${tenant} was cancelled already`;
    if (action === 'reactivate' && /not cancelled/.test(err.message)) return `tenant ${tenant} was active already`;
    // deprovisioned: nothing the subscription can bring back; the operator provisions a new tenant
    deps.log.warn({ tenant, action }, err.message);
    return `tenant ${tenant}: ${err.message}`;
  }
}

async function invoiceChanged(
  deps: BillingDeps,
  db: Db,
  event: Stripe.Event,
  invoice: Stripe.Invoice,
): Promise<{ outcome: string; workspace?: Workspace }> {
  const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription ?? null);
  const customer = idOf(invoice.customer);
  const slug = invoice.parent?.subscription_details?.metadata?.workspace ?? invoice.metadata?.workspace;
  const workspace = await resolveWorkspace(db, { subscription: subscriptionId, customer, slug });
  if (!workspace) return { outcome: `ignored: invoice ${invoice.id} belongs to no workspace` };
  if (!invoice.id) return { outcome: 'ignored: an invoice without id (a preview)', workspace };

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
  const sub = await findSubscription(db, workspace.id, true);
  let outcome = `invoice ${invoice.id} ${invoice.status ?? ''}`.trim();

  if (event.type === 'invoice.paid' && sub) {
    const hadSuspension = sub.suspended_at !== null;
    await db.query(
      `UPDATE subscriptions SET past_due_since = NULL, suspended_at = NULL,
              status = CASE WHEN status IN ('past_due', 'unpaid') THEN 'active' ELSE status END, updated_at = now()
        WHERE workspace_id = $1`,
      [workspace.id],
    );
    await clearDunning(deps, db, workspace, sub, 'paid');
    if (hadSuspension) outcome += '; suspension lifted';
    await publishInvoiceEvent(
      deps,
      event,
      workspace,
      invoice,
      hadSuspension ? 'billing.workspace.reinstated' : 'billing.invoice.paid',
    );
  } else if (event.type === 'invoice.payment_failed' && sub) {
    if (sub.past_due_since) {
      outcome += '; dunning already under way';
    } else {
      const { rows } = await db.query<{ past_due_since: Date; dunning_count: number }>(
        `UPDATE subscriptions SET past_due_since = now(), dunning_count = dunning_count + 1,
                status = CASE WHEN status IN ('active', 'trialing') THEN 'past_due' ELSE status END, updated_at = now()
          WHERE workspace_id = $1 RETURNING past_due_since, dunning_count`,
        [workspace.id],
      );
      const run = rows[0]!;
      const workflowId = await startDunning(deps, workspace, {
        run: run.dunning_count,
        input: {
          workspaceId: workspace.id,
          workspace: workspace.slug,
          run: run.dunning_count,
          pastDueSince: run.past_due_since.toISOString(),
          invoiceId: invoice.id,
          graceMs: deps.config.BILLING_GRACE_PERIOD,
        },
      });
      outcome += `; dunning started (${workflowId})`;
    }
    await publishInvoiceEvent(deps, event, workspace, invoice, 'billing.invoice.payment_failed');
  } else if (!sub) {
    outcome += '; the workspace has no subscription on record';
  }
  return { outcome, workspace };
}

function publishInvoiceEvent(
  deps: BillingDeps,
  event: Stripe.Event,
  workspace: Workspace,
  invoice: Stripe.Invoice,
  type: string,
) {
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

async function startDunning(
  deps: BillingDeps,
  workspace: Workspace,
  opts: { run: number; input: DunningInput },
): Promise<string> {
  const workflowId = dunningWorkflowId(workspace.slug, opts.run);
  try {
    await deps.temporal.workflow.start<DunWorkspaceWorkflow>(DUNNING_WORKFLOW, {
      workflowId,
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [opts.input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Dunning #${opts.run} of workspace ${workspace.slug}: suspension after ${Math.round(opts.input.graceMs / 1000)} s unless paid`,
      staticDetails: `First failed invoice: ${opts.input.invoiceId}\nPast due since: ${opts.input.pastDueSince}`,
      typedSearchAttributes: [
        { key: searchAttributes.workspace, value: workspace.slug },
        { key: searchAttributes.currentStep, value: 'queued' },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return workflowId;
}

/** Ends the workspace's running dunning workflow, if any (payment came in, or the subscription ended). */
async function clearDunning(
  deps: BillingDeps,
  db: Db,
  workspace: Workspace,
  sub: SubscriptionRow | undefined,
  reason: 'paid' | 'cancelled',
) {
  if (!sub || sub.dunning_count === 0) return;
  if (reason === 'cancelled')
    await db.query('UPDATE subscriptions SET past_due_since = NULL WHERE workspace_id = $1', [workspace.id]);
  try {
    await deps.temporal.workflow
      .getHandle(dunningWorkflowId(workspace.slug, sub.dunning_count))
      .signal(dunningSettledSignal, { reason });
  } catch (err) {
    // it ended already (settled before, or never started): nothing to tell it
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
