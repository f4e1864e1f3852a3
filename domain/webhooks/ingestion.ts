/**
 * Event ingestion from the tenant ERPs (issue 9 "Where events come from"): each tenant's ERP posts
 * its record changes to the events service at `POST /api/v1/ingest/erp/<tenant>` with
 * `Authorization: Bearer <token of that tenant>`. The token is derived, per tenant, from an
 * ingestion key (itself derived from SECRETS_KEY with HKDF; HMAC-SHA256 of the tenant name): a
 * tenant's token proves that tenant only and nothing is stored per tenant. Provisioning hands a
 * tenant its token (on real Odoo: in the headers of the base_automation "Send Webhook
 * Notification" rules; for the stand-in: its `events` option). The inventory's planned pair
 * `erp → event-ingestion` is where this key belongs once per-tenant tokens get a rotation story
 * (the pair rotation verifies a consumer's switch from the target's usage records, which derived
 * tokens do not have).
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { CloudEvent } from '../events/events.js';

/** The ingestion key: HKDF-SHA256 of SECRETS_KEY for this one purpose. */
export function ingestionKey(secretsKey: string): string {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretsKey, 'base64'), Buffer.alloc(0), 'plana erp event ingestion v1', 32)).toString('base64');
}
/** The event types the ERP emits (and the only ones ingestion accepts). */
export const ERP_EVENT_TYPES = ['invoice.posted', 'payment.received', 'stock.changed'] as const;

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
  type: (typeof ERP_EVENT_TYPES)[number];
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
