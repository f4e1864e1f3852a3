/**
 * Event ingestion from the tenant ERPs (issue 9 "Where events come from"): each tenant's ERP posts
 * its record changes, as Odoo's automation rules send them (domain/erp/event-rules.ts), to the
 * events service at `POST /api/v1/ingest/odoo/<tenant>/<event type>` with
 * `Authorization: Basic <tenant>:<token of that tenant>` (the userinfo of the rule's URL). The
 * token is derived, per tenant, from an ingestion key (itself derived from SECRETS_KEY with HKDF;
 * HMAC-SHA256 of the tenant name): a tenant's token proves that tenant only and nothing is stored
 * per tenant. Provisioning writes it into the tenant's rules. The inventory's planned pair
 * `erp → event-ingestion` is where this key belongs once per-tenant tokens get a rotation story
 * (the pair rotation verifies a consumer's switch from the target's usage records, which derived
 * tokens do not have).
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import type { CloudEvent } from '../events/events.js';

/** The ingestion key: HKDF-SHA256 of SECRETS_KEY for this one purpose. */
export function ingestionKey(secretsKey: string): string {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretsKey, 'base64'), Buffer.alloc(0), 'plana erp event ingestion v1', 32)).toString('base64');
}
/** The event types the ERP emits (and the only ones ingestion accepts). */
export const ERP_EVENT_TYPES = ['invoice.posted', 'payment.received', 'stock.changed'] as const;
export type ErpEventType = (typeof ERP_EVENT_TYPES)[number];

export function ingestionToken(serviceKey: string, tenant: string): string {
  return `ing_${createHmac('sha256', serviceKey).update(`erp-events:${tenant}`).digest('base64url')}`;
}

export function ingestionTokenValid(serviceKey: string, tenant: string, presented: string): boolean {
  const want = Buffer.from(ingestionToken(serviceKey, tenant));
  const got = Buffer.from(presented);
  return want.length === got.length && timingSafeEqual(want, got);
}

/** The body an ERP posts: what changed (Odoo's webhook automation sends the record's fields). */
export interface ErpChange {
  type: ErpEventType;
  /** `<model>:<id>:<what>`: the same change posted twice is one event. */
  id: string;
  time?: string;
  data: Record<string, unknown>;
}

export function erpCloudEvent(tenant: string, workspace: string | null, change: ErpChange): CloudEvent {
  return {
    specversion: '1.0',
    id: change.id,
    source: `/erp/${tenant}`,
    type: change.type,
    time: change.time ?? new Date().toISOString(),
    datacontenttype: 'application/json',
    data: change.data,
    tenant,
    ...(workspace ? { workspace } : {}),
  };
}

/** What Odoo's "Send Webhook Notification" posts: `_model`, `_id`, `_action` and the rule's fields. */
export type OdooWebhookPayload = { _model: string; _id: number; _action?: string } & Record<string, unknown>;

/** The model each event type's rule watches (domain/erp/event-rules.ts). */
export const EVENT_MODEL: Record<ErpEventType, string> = {
  'invoice.posted': 'account.move',
  'payment.received': 'account.move',
  'stock.changed': 'stock.move',
};

const num = (v: unknown): number | null => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' && !Number.isNaN(Number(v)) ? Number(v) : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
/** many2one read with load=None is the id (or false); a name_get pair [id, name] also passes. */
const ref = (v: unknown): number | null => (typeof v === 'number' ? v : Array.isArray(v) && typeof v[0] === 'number' ? v[0] : null);

/**
 * The change an Odoo webhook payload reports, as one event: its id is the model, the record and the
 * state it reached (`account.move:42:posted`), the same id the sweep derives, so the same change
 * posted twice, or posted and swept, is one event. Answers a reason when the payload does not fit
 * the event type.
 */
export function odooChange(type: ErpEventType, payload: OdooWebhookPayload): ErpChange | string {
  if (payload._model !== EVENT_MODEL[type]) return `${type} comes from ${EVENT_MODEL[type]} records, not ${String(payload._model)}`;
  const id = payload._id;
  if (type === 'stock.changed') {
    return {
      type,
      id: `stock.move:${id}:done`,
      data: {
        id,
        reference: str(payload.reference),
        productId: ref(payload.product_id),
        quantity: num(payload.quantity) ?? num(payload.product_uom_qty),
        locationId: ref(payload.location_id),
        locationDestId: ref(payload.location_dest_id),
        date: str(payload.date),
      },
    };
  }
  const data = {
    id,
    name: str(payload.name),
    moveType: str(payload.move_type),
    partnerId: ref(payload.partner_id),
    currencyId: ref(payload.currency_id),
    amountTotal: num(payload.amount_total) ?? 0,
  };
  if (type === 'invoice.posted') {
    if (payload.state !== 'posted') return `invoice.posted needs state "posted", not ${JSON.stringify(payload.state ?? null)}`;
    return { type, id: `account.move:${id}:posted`, data: { ...data, invoiceDate: str(payload.invoice_date) } };
  }
  const paymentState = payload.payment_state;
  if (paymentState !== 'paid' && paymentState !== 'in_payment') return `payment.received needs payment_state "paid" or "in_payment", not ${JSON.stringify(paymentState ?? null)}`;
  return { type, id: `account.move:${id}:${paymentState}`, data: { ...data, paymentState, amountResidual: num(payload.amount_residual) ?? 0 } };
}

/** The token of `Authorization: Basic <tenant>:<token>` (the userinfo Odoo's requests turns into it), or of a Bearer. */
export function presentedToken(authorization: string | undefined): string {
  const h = authorization ?? '';
  if (/^bearer\s+/i.test(h)) return h.replace(/^bearer\s+/i, '').trim();
  if (!/^basic\s+/i.test(h)) return '';
  const decoded = Buffer.from(h.replace(/^basic\s+/i, '').trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? '' : decoded.slice(colon + 1);
}

/** Records ERP event ids as seen (migration 612, read by the catch-up sweep, erp-sweep.ts); answers the ones that were not. */
export async function markSeen(pool: pg.Pool, tenant: string, ids: string[], via: 'odoo' | 'sweep' | 'baseline'): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const { rows } = await pool.query<{ event_id: string }>(
    `INSERT INTO erp_events_seen (tenant, event_id, via) SELECT $1, unnest($2::text[]), $3 ON CONFLICT DO NOTHING RETURNING event_id`,
    [tenant, ids, via],
  );
  return new Set(rows.map((r) => r.event_id));
}

