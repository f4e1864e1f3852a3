/**
 * Event ingestion from the tenant ERPs ("Where events come from" in the docs): each tenant's ERP posts
 * its record changes, as Odoo's automation rules send them (domain/erp-events/automation-rules.ts), to the
 * events service at `POST /api/v1/ingest/odoo/<tenant>/<event type>` with
 * `Authorization: Basic <tenant>:<token of that tenant>` (the userinfo of the rule's URL).
 *
 * The token is HMAC-SHA256 of the tenant name under the key of the service-key pair
 * `erp → event-ingestion` (domain/service-keys/inventory.ts): a tenant's token proves
 * that tenant only and nothing is stored per tenant. The pair's key lives in the registry and the
 * secret store like every other pair's, so it rotates with the rotation workflow: the reconcile
 * writes tokens of the pair's *current* key (secret store), the events service accepts a token of
 * any key the registry accepts (IngestionKeyRing below), and the rotation rewrites every tenant's
 * rules to the new key's tokens (switch proof `rules`, domain/erp-events/ingestion-key-rotation.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import type { CloudEvent } from '../events/events.js';
import type { SecretStore } from '../service-keys/secret-store.js';
import type { ServiceCallerIdentity, ServiceKeyCheck } from '../service-keys/service-key-auth.js';

/** The service-key pair whose key the tenant tokens are made from. */
export const INGESTION_PAIR = { caller: 'erp', target: 'event-ingestion' } as const;
export type IngestionPair = { caller: string; target: string };

/** The pair's current key, from the secret store: what the reconcile writes the tenants' tokens with. */
export async function currentIngestionKey(
  store: SecretStore,
  pair: IngestionPair = INGESTION_PAIR,
): Promise<{ key: string; keyId: string }> {
  const { key, keyId } = await store.current(pair.caller, pair.target);
  return { key, keyId };
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

/**
 * The events service's check of a tenant token: the token must be the tenant's HMAC under a key of
 * the pair that the registry accepts (pending, current, previous; not revoked). The keys (the
 * non-revoked versions in the secret store, and recently revoked ones: the verifier refuses those
 * and raises the revoked-key alert, misuse.ts) are kept in memory and read again when the target's
 * ServiceKeyVerifier has reloaded (it does on NOTIFY service_keys: a new pending key is registered
 * in the transaction that stores its secret) and at least every `ttlMs`; a token no key matches
 * reads them again at most once a second. The matched key is then checked by the verifier as if it
 * were an X-API-Key: a key revoked since the last read gets 401 within the verifier's reload time,
 * and the use lands in the registry's usage records under the key's id (the rotation's evidence).
 * Every key's HMAC is computed and compared in constant time; the first match is not a shortcut.
 */
export class IngestionKeyRing {
  private keys: { keyId: string; key: string }[] = [];
  private loadedAt = 0;
  private verifierLoadedAt: number | undefined;
  private lastMissReload = 0;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly opts: {
      /** The keys of a pair's versions the verifier may know (PgSecretStore.acceptedVersions). */
      keys: (caller: string, target: string) => Promise<{ keyId: string; key: string }[]>;
      pair: IngestionPair;
      /** The pair target's verifier (its `loadedAt` tells when it reloaded). */
      verifier: ServiceKeyCheck & { loadedAt?: number };
      ttlMs: number;
    },
  ) {}

  private reload(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const seen = this.opts.verifier.loadedAt;
        this.keys = await this.opts.keys(this.opts.pair.caller, this.opts.pair.target);
        this.loadedAt = Date.now();
        this.verifierLoadedAt = seen;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  private match(tenant: string, token: string): { keyId: string; key: string } | undefined {
    let found: { keyId: string; key: string } | undefined;
    for (const k of this.keys) if (ingestionTokenValid(k.key, tenant, token) && !found) found = k;
    return found;
  }

  /** The caller identity (`erp`, the key's id) when `token` is the tenant's under an accepted key. */
  async authenticate(tenant: string, token: string): Promise<ServiceCallerIdentity | undefined> {
    if (Date.now() - this.loadedAt >= this.opts.ttlMs || this.opts.verifier.loadedAt !== this.verifierLoadedAt)
      await this.reload();
    let found = this.match(tenant, token);
    if (!found && Date.now() - this.lastMissReload >= 1_000) {
      this.lastMissReload = Date.now();
      await this.reload();
      found = this.match(tenant, token);
    }
    if (!found) return undefined;
    const who = this.opts.verifier.identify(found.key);
    return who && who.caller === this.opts.pair.caller ? who : undefined;
  }
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

/** The model each event type's rule watches (domain/erp-events/automation-rules.ts). */
export const EVENT_MODEL: Record<ErpEventType, string> = {
  'invoice.posted': 'account.move',
  'payment.received': 'account.move',
  'stock.changed': 'stock.move',
};

const num = (v: unknown): number | null =>
  typeof v === 'number' ? v : typeof v === 'string' && v !== '' && !Number.isNaN(Number(v)) ? Number(v) : null;
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
/** many2one read with load=None is the id (or false); a name_get pair [id, name] also passes. */
const ref = (v: unknown): number | null =>
  typeof v === 'number' ? v : Array.isArray(v) && typeof v[0] === 'number' ? v[0] : null;

/**
 * The change an Odoo webhook payload reports, as one event: its id is the model, the record and the
 * state it reached (`account.move:42:posted`), the same id the sweep derives, so the same change
 * posted twice, or posted and swept, is one event. Answers a reason when the payload does not fit
 * the event type.
 */
export function odooChange(type: ErpEventType, payload: OdooWebhookPayload): ErpChange | string {
  if (payload._model !== EVENT_MODEL[type])
    return `${type} comes from ${EVENT_MODEL[type]} records, not ${String(payload._model)}`;
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
    if (payload.state !== 'posted')
      return `invoice.posted needs state "posted", not ${JSON.stringify(payload.state ?? null)}`;
    return { type, id: `account.move:${id}:posted`, data: { ...data, invoiceDate: str(payload.invoice_date) } };
  }
  const paymentState = payload.payment_state;
  if (paymentState !== 'paid' && paymentState !== 'in_payment')
    return `payment.received needs payment_state "paid" or "in_payment", not ${JSON.stringify(paymentState ?? null)}`;
  return {
    type,
    id: `account.move:${id}:${paymentState}`,
    data: { ...data, paymentState, amountResidual: num(payload.amount_residual) ?? 0 },
  };
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

/** Records ERP event ids as seen (migration 612, read by the catch-up sweep, sweep.ts); answers the ones that were not. */
export async function markSeen(
  pool: pg.Pool,
  tenant: string,
  ids: string[],
  via: 'odoo' | 'sweep' | 'baseline',
): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const { rows } = await pool.query<{ event_id: string }>(
    `INSERT INTO erp_events_seen (tenant, event_id, via) SELECT $1, unnest($2::text[]), $3 ON CONFLICT DO NOTHING RETURNING event_id`,
    [tenant, ids, via],
  );
  return new Set(rows.map((r) => r.event_id));
}
