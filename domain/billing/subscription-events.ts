/**
 * customer.subscription.* events: the workspace's subscription row, then what follows on the
 * tenant (cancel, reactivation, tier change), the dunning run, and a CloudEvent on the events stream.
 */
import type Stripe from 'stripe';
import { AppError } from '../../lib/errors.js';
import { cloudEvent } from '../events/events.js';
import { runTenantAction } from '../tenants/operator-actions.js';
import type { TenantClientSpec, Tier } from '../tenants/types.js';
import { clearDunning } from './dunning-runs.js';
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
import {
  findSubscription,
  SUBSCRIPTION_STATUSES,
  tenantOfWorkspace,
  type SubscriptionRow,
  type SubscriptionStatus,
} from './subscriptions.js';
import { isTier } from './tiers.js';

/** A subscription as the event states it, for the subscriptions row. */
interface SubscriptionChange {
  sub: Stripe.Subscription;
  item: Stripe.SubscriptionItem | undefined;
  customer: string | null;
  tier: Tier;
  status: SubscriptionStatus;
  eventTime: Date;
}

export async function subscriptionChanged(
  deps: BillingDeps,
  db: Db,
  event: Stripe.Event,
  sub: Stripe.Subscription,
): Promise<EventOutcome> {
  const customer = idOf(sub.customer);
  const workspace = await resolveWorkspace(db, { subscription: sub.id, customer, slug: sub.metadata?.workspace });
  if (!workspace)
    return {
      outcome: `ignored: subscription ${sub.id} belongs to no workspace (no known customer, no metadata.workspace)`,
    };

  const item = sub.items?.data?.[0];
  const tier = item?.price?.lookup_key ?? sub.metadata?.tier;
  if (!isTier(tier)) {
    // permanent: Stripe sending it again would not help; the operator fixes the price's lookup_key
    deps.log.error({ eventId: event.id, subscription: sub.id }, 'subscription price has no known tier as lookup_key');
    return {
      outcome: `ignored: subscription ${sub.id} has no tier (price lookup_key or metadata.tier must be starter, pro or enterprise)`,
      workspace,
    };
  }
  const status = subscriptionStatus(event, sub);
  if (!status)
    return { outcome: `ignored: subscription status "${sub.status}" is not one the platform knows`, workspace };

  const before = await findSubscription(db, workspace.id, true);
  const change: SubscriptionChange = { sub, item, customer, tier, status, eventTime: new Date(event.created * 1000) };
  const skipped = notToApply(before, change);
  if (skipped) return { outcome: skipped, workspace };

  await upsertSubscription(db, workspace, change);
  const followUp = await followOnTenant(deps, db, workspace, before, change);
  await publishSubscriptionEvent(deps, event, workspace, before, change, followUp);
  return { outcome: followUp.done.join('; '), workspace };
}

/** The status to record: the event's, canceled for a deletion; undefined for one the platform does not know. */
function subscriptionStatus(event: Stripe.Event, sub: Stripe.Subscription): SubscriptionStatus | undefined {
  if (event.type === 'customer.subscription.deleted') return 'canceled';
  return (SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status)
    ? (sub.status as SubscriptionStatus)
    : undefined;
}

/** Why the event changes nothing (older than what was applied, or cancels a subscription that was replaced), if so. */
function notToApply(before: SubscriptionRow | undefined, change: SubscriptionChange): string | undefined {
  if (before?.provider_updated_at && before.provider_updated_at > change.eventTime)
    return `stale: a newer subscription event was applied already`;
  const current = before?.provider_subscription_id;
  if (current && current !== change.sub.id && change.status === 'canceled')
    return `ignored: ${change.sub.id} is not the workspace's current subscription (${current})`;
  return undefined;
}

async function upsertSubscription(db: Db, workspace: Workspace, change: SubscriptionChange): Promise<void> {
  const { sub, item } = change;
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
      change.tier,
      change.status,
      item?.quantity ?? 1,
      toDate(item?.current_period_start),
      toDate(item?.current_period_end),
      sub.cancel_at_period_end === true,
      change.customer,
      sub.id,
      item?.price?.unit_amount ?? null,
      (item?.price?.currency ?? sub.currency ?? null)?.toLowerCase() ?? null,
      change.eventTime,
    ],
  );
}

interface TenantFollowUp {
  tenant: string | undefined;
  /** The CloudEvent type to publish. */
  published: string;
  /** What was done, for the outcome. */
  done: string[];
}

/** A cancel ends dunning and cancels the tenant; a canceled subscription live again reactivates it; a live one sets its tier. */
async function followOnTenant(
  deps: BillingDeps,
  db: Db,
  workspace: Workspace,
  before: SubscriptionRow | undefined,
  { tier, status }: SubscriptionChange,
): Promise<TenantFollowUp> {
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
  return { tenant, published, done };
}

function publishSubscriptionEvent(
  deps: BillingDeps,
  event: Stripe.Event,
  workspace: Workspace,
  before: SubscriptionRow | undefined,
  change: SubscriptionChange,
  followUp: TenantFollowUp,
) {
  return deps.publish(
    cloudEvent({
      id: event.id,
      source: EVENT_SOURCE,
      type: followUp.published,
      subject: workspace.slug,
      data: {
        workspace: workspace.slug,
        tenant: followUp.tenant ?? null,
        tier: change.tier,
        status: change.status,
        seats: change.item?.quantity ?? 1,
        subscription: change.sub.id,
        previousTier: before?.tier ?? null,
      },
    }),
  );
}

/**
 * DESIGN §5: a tier change updates the TenantClient (generation + 1) where it lives, on the
 * Kubernetes API, as `kubectl apply` of the new tier would; the controller applies the new generation
 * and its reconcile brings the tenant to the tier's module set. Written anywhere else, the object would
 * keep the old tier (`kubectl get` shows it) and the controller would apply it again. The same tier
 * again changes nothing.
 */
async function changeTenantTier(deps: BillingDeps, db: Db, tenant: string, tier: Tier): Promise<string | undefined> {
  const { rows } = await db.query<{ phase: string }>('SELECT phase FROM tenant_status WHERE name = $1', [tenant]);
  const phase = rows[0]?.phase;
  if (!phase) return undefined;
  const object = await deps
    .tenantClients()
    .get(tenant)
    .catch((err: unknown) => {
      // a tenant of the platform's records only (made before TenantClients lived on the Kubernetes
      // API): nothing to write the tier to; the operator applies its TenantClient
      if (err instanceof AppError && err.code === 'NOT_FOUND') return undefined;
      throw err;
    });
  if (!object) {
    deps.log.warn({ tenant, tier }, 'tier change for a tenant without a TenantClient on the Kubernetes API');
    return `tenant ${tenant} has no TenantClient on the Kubernetes API: tier ${tier} not applied`;
  }
  const spec = object.spec as unknown as TenantClientSpec;
  if (spec.tier === tier) return undefined;
  if (['Cancelled', 'Deprovisioning', 'Deprovisioned'].includes(phase))
    return `tenant ${tenant} is ${phase.toLowerCase()}: tier left at ${spec.tier}`;
  const applied = await deps
    .tenantClients()
    .apply({ metadata: { name: tenant, labels: object.metadata.labels }, spec: { ...spec, tier } });
  return `tenant ${tenant} tier ${spec.tier} → ${tier} (generation ${applied.generation})`;
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
