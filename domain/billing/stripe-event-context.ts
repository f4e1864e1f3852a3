/**
 * What every Stripe event handler shares: the platform it acts on, what it answers, and the
 * workspace a Stripe object belongs to.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { CloudEvent } from '../events/events.js';
import type { TenantClientApi } from '../tenants/tenant-client-api.js';

/** The CloudEvents' source of everything the billing webhooks publish. */
export const EVENT_SOURCE = '/plana/billing/stripe';

export interface BillingDeps {
  pool: pg.Pool;
  temporal: Client;
  config: Config;
  /** Publishes a CloudEvent through the events service (billing-webhooks → events). */
  publish: (event: CloudEvent) => Promise<unknown>;
  /** The TenantClients on the Kubernetes API, where a tier change is written (made on first use). */
  tenantClients: () => TenantClientApi;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

/** The event's transaction. */
export type Db = pg.PoolClient;

export interface Workspace {
  id: string;
  slug: string;
}

/** What an event did (recorded in billing_events), and to which workspace. */
export interface EventOutcome {
  outcome: string;
  workspace?: Workspace;
}

/** A Stripe timestamp (seconds) as a Date. */
export const toDate = (s: number | null | undefined) => (typeof s === 'number' ? new Date(s * 1000) : null);
/** The id of an expandable Stripe field (an id, or the object itself). */
export const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? null));

async function workspaceBySlug(db: Db, slug: unknown): Promise<Workspace | undefined> {
  if (typeof slug !== 'string' || !slug) return undefined;
  return (await db.query<Workspace>('SELECT id, slug FROM workspaces WHERE slug = $1', [slug])).rows[0];
}

/** The workspace a Stripe object belongs to: by the subscription or customer we know, else `metadata.workspace` (the slug). */
export async function resolveWorkspace(
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
