/**
 * The payment provider stand-in: builds Stripe-shaped events (the objects as Stripe's API version
 * of the installed `stripe` library sends them: a subscription's period on its items, an invoice's
 * subscription under `parent.subscription_details`) and posts them to the platform's
 * `POST /api/webhooks/stripe` signed the way Stripe signs them (`Stripe-Signature: t=…,v1=…`, made
 * with the official library's `webhooks.generateTestHeaderString`). Used by the tests and by hand:
 *
 *   npm run stripe -- subscribe demo --tier pro --seats 3
 *   npm run stripe -- fail demo        # invoice.payment_failed → dunning
 *   npm run stripe -- pay demo         # invoice.paid → lifts a suspension
 *   npm run stripe -- tier demo enterprise
 *   npm run stripe -- cancel demo      # customer.subscription.deleted → tenant cancelled (soak)
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import Stripe from 'stripe';

/** The tiers, as the catalogue's prices' `lookup_key`s name them. */
export type Tier = 'starter' | 'pro' | 'enterprise';

/** Per-seat monthly prices of the stand-in's catalogue, in cents. */
export const PRICES: Record<Tier, number> = { starter: 2900, pro: 7900, enterprise: 19900 };

const rid = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);
const MONTH = 30 * 86_400;

export interface SubscriptionParams {
  id: string;
  customer: string;
  workspace: string;
  tier: Tier;
  seats?: number;
  status?: Stripe.Subscription.Status;
  periodStart?: number;
  cancelAtPeriodEnd?: boolean;
}

/** A subscription object: one item whose price's `lookup_key` is the tier. */
export function subscription(p: SubscriptionParams): Stripe.Subscription {
  const start = p.periodStart ?? now();
  return {
    id: p.id,
    object: 'subscription',
    customer: p.customer,
    status: p.status ?? 'active',
    currency: 'eur',
    cancel_at_period_end: p.cancelAtPeriodEnd ?? false,
    created: start,
    start_date: start,
    livemode: false,
    metadata: { workspace: p.workspace },
    items: {
      object: 'list',
      has_more: false,
      url: `/v1/subscription_items?subscription=${p.id}`,
      data: [
        {
          id: rid('si'),
          object: 'subscription_item',
          quantity: p.seats ?? 1,
          current_period_start: start,
          current_period_end: start + MONTH,
          subscription: p.id,
          created: start,
          metadata: {},
          price: {
            id: `price_${p.tier}_monthly`,
            object: 'price',
            active: true,
            currency: 'eur',
            unit_amount: PRICES[p.tier],
            lookup_key: p.tier,
            type: 'recurring',
            recurring: { interval: 'month', interval_count: 1, usage_type: 'licensed' },
          },
        },
      ],
    },
  } as unknown as Stripe.Subscription;
}

export interface InvoiceParams {
  id?: string;
  customer: string;
  subscription: string;
  workspace: string;
  tier: Tier;
  seats?: number;
  status: 'open' | 'paid';
  attempt?: number;
  periodStart?: number;
}

export function invoice(p: InvoiceParams): Stripe.Invoice {
  const id = p.id ?? rid('in');
  const amount = PRICES[p.tier] * (p.seats ?? 1);
  const start = p.periodStart ?? now();
  const paid = p.status === 'paid';
  return {
    id,
    object: 'invoice',
    customer: p.customer,
    number: `PLANA-${id.slice(3, 11).toUpperCase()}`,
    status: p.status,
    currency: 'eur',
    amount_due: amount,
    amount_paid: paid ? amount : 0,
    amount_remaining: paid ? 0 : amount,
    attempt_count: p.attempt ?? 1,
    attempted: true,
    next_payment_attempt: paid ? null : now() + 3 * 86_400,
    created: start,
    period_start: start,
    period_end: start,
    hosted_invoice_url: `https://invoice.stripe.com/i/acct_sandbox/test_${id}`,
    invoice_pdf: `https://pay.stripe.com/invoice/acct_sandbox/test_${id}/pdf`,
    livemode: false,
    metadata: {},
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { subscription: p.subscription, metadata: { workspace: p.workspace } },
    },
    lines: {
      object: 'list',
      has_more: false,
      url: `/v1/invoices/${id}/lines`,
      data: [
        {
          id: rid('il'),
          object: 'line_item',
          amount,
          currency: 'eur',
          quantity: p.seats ?? 1,
          period: { start, end: start + MONTH },
        },
      ],
    },
  } as unknown as Stripe.Invoice;
}

/** An event envelope around `object`, as Stripe posts it. */
export function event(
  type: string,
  object: Stripe.Subscription | Stripe.Invoice,
  opts: { id?: string; created?: number } = {},
): Stripe.Event {
  return {
    id: opts.id ?? rid('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: opts.created ?? now(),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: rid('req'), idempotency_key: null },
    data: { object },
  } as unknown as Stripe.Event;
}

/** The `Stripe-Signature` header Stripe would send for `payload` (a timestamp in the past for replay tests). */
export const signature = (payload: string, secret: string, timestamp?: number) =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp !== undefined ? { timestamp } : {}) });

/** POSTs the event to the platform's webhook endpoint, signed; returns the status and the JSON answer. */
export async function sendEvent(
  webhookUrl: string,
  secret: string,
  evt: Stripe.Event,
  opts: { payload?: string; signature?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const payload = opts.payload ?? JSON.stringify(evt);
  const res = await fetch(webhookUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'stripe-signature': opts.signature ?? signature(payload, secret),
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    },
    body: payload,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** A Stripe-shaped object id: the prefix and `length` random letters and digits (as unguessable as Stripe's). */
export function stripeId(prefix: string, length: number): string {
  let out = '';
  while (out.length < length)
    for (const b of randomBytes(length)) if (b < 248 && out.length < length) out += ALPHANUMERIC[b % 62];
  return `${prefix}_${out}`;
}

type IssuedIds = Record<string, { customer: string; subscriptions: Record<string, string> }>;
const issued: IssuedIds = {};

/**
 * The stand-in's ids for a workspace: its customer and its n-th subscription, random like
 * Stripe's (`cus_` + 14, `sub_` + 24 letters and digits), issued on first use and the same on
 * every later ask in this process. With `file` they are also kept there, so separate runs (the
 * `npm run stripe` commands, `npm run dev`) keep talking about the same customer and subscription.
 */
export function sandboxIds(workspace: string, n = 1, file?: string): { customer: string; subscription: string } {
  if (file && existsSync(file)) Object.assign(issued, JSON.parse(readFileSync(file, 'utf8')) as IssuedIds);
  const entry = (issued[workspace] ??= { customer: stripeId('cus', 14), subscriptions: {} });
  const subscription = (entry.subscriptions[String(n)] ??= stripeId('sub', 24));
  if (file) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(issued, null, 2));
  }
  return { customer: entry.customer, subscription };
}

/** Where `npm run stripe` and `npm run dev` keep the stand-in's ids (under DATA_DIR). */
export const sandboxIdsFile = (dataDir: string) => path.join(dataDir, 'stripe-stand-in-ids.json');

if (import.meta.url === `file://${process.argv[1]}`) {
  // the account API and the webhook endpoint's signing secret; `npm run dev`'s by default
  const env = process.env;
  const url = new URL('/api/webhooks/stripe', env.ACCOUNT_API_URL ?? 'http://127.0.0.1:3000').toString();
  const secret = env.STRIPE_WEBHOOK_SECRET ?? 'whsec_dev_only_local_webhook_secret';
  const dataDir = process.env.DATA_DIR ?? (process.env.ERP_BACKEND === 'odoo' ? '.data/odoo' : '.data');
  const send = async (evt: Stripe.Event) => {
    const res = await sendEvent(url, secret, evt);
    console.log(`${evt.type} ${evt.id} → ${res.status} ${JSON.stringify(res.body)}`);
    if (res.status >= 300) process.exitCode = 1;
  };
  const program = new Command('stripe').description(
    'Send signed Stripe events to the account API (the payment provider stand-in)',
  );
  const common = (c: Command) =>
    c
      .option('--tier <tier>', 'starter, pro or enterprise', 'pro')
      .option('--seats <n>', 'seats', '1')
      .option('--n <n>', "the workspace's n-th subscription", '1');
  type Opts = { tier: Tier; seats: string; n: string };
  const ids = (ws: string, o: Opts) => sandboxIds(ws, Number(o.n), sandboxIdsFile(dataDir));
  common(program.command('subscribe <workspace>').description('customer.subscription.created')).action(
    async (ws: string, o: Opts) => {
      await send(
        event(
          'customer.subscription.created',
          subscription({
            ...ids(ws, o),
            id: ids(ws, o).subscription,
            workspace: ws,
            tier: o.tier,
            seats: Number(o.seats),
          }),
        ),
      );
    },
  );
  common(
    program.command('tier <workspace> <newTier>').description('customer.subscription.updated with another tier'),
  ).action(async (ws: string, tier: Tier, o: Opts) => {
    await send(
      event(
        'customer.subscription.updated',
        subscription({ ...ids(ws, o), id: ids(ws, o).subscription, workspace: ws, tier, seats: Number(o.seats) }),
      ),
    );
  });
  common(program.command('cancel <workspace>').description('customer.subscription.deleted')).action(
    async (ws: string, o: Opts) => {
      await send(
        event(
          'customer.subscription.deleted',
          subscription({ ...ids(ws, o), id: ids(ws, o).subscription, workspace: ws, tier: o.tier, status: 'canceled' }),
        ),
      );
    },
  );
  common(program.command('fail <workspace>').description('invoice.payment_failed')).action(
    async (ws: string, o: Opts) => {
      await send(
        event(
          'invoice.payment_failed',
          invoice({ ...ids(ws, o), workspace: ws, tier: o.tier, seats: Number(o.seats), status: 'open' }),
        ),
      );
    },
  );
  common(program.command('pay <workspace>').description('invoice.paid')).action(async (ws: string, o: Opts) => {
    await send(
      event(
        'invoice.paid',
        invoice({ ...ids(ws, o), workspace: ws, tier: o.tier, seats: Number(o.seats), status: 'paid' }),
      ),
    );
  });
  await program.parseAsync();
}
