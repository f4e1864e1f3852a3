/**
 * The catch-up sweep of ERP events ("nothing lost" in the docs). Odoo posts a change once, from inside
 * its transaction, with a 1 s timeout, and never again (domain/erp-events/automation-rules.ts): a post the
 * platform missed (events service down or slow, a network blip) is gone. Every
 * ERP_EVENTS_SWEEP_INTERVAL the schedule `erp-events-sweep` reads, per tenant with a route, the
 * customer invoices written since the last sweep (as the tenant's read-only API user) and
 * publishes the invoice.posted / payment.received events their state implies that the platform
 * has not seen, with the ids the rules' posts have (`account.move:<id>:posted`), so a change both
 * posted and swept is one event.
 *
 * What the platform has seen is kept in `erp_events_seen` (migration 612): the event ingestion
 * records each post, the sweep each publish. It is permanent, unlike the events service's 7-day
 * de-duplication, so an invoice posted months ago and paid today is not posted again. A tenant's
 * first sweep only records what its ERP already shows (the baseline) and publishes nothing: the
 * past is not news. `stock.changed` is not swept: the API user cannot read stock moves (it has
 * accounting groups only), and the rule's post is its only source.
 */
import type pg from 'pg';
import type { Client } from '@temporalio/client';
import { ensureIntervalSchedule, type ScheduleOutcome } from '../temporal-schedule.js';
import { publishEvent } from '../events/events.js';
import { erpClientFor, loadErpApiCredentials } from '../erp/api-user.js';
import { EVENT_RULES } from './automation-rules.js';
import { routedTenants, type RoutedTenant } from '../tenants/http-routes.js';
import pLimit from 'p-limit';
import { erpCloudEvent, markSeen, odooChange, type ErpChange } from './ingestion.js';

export const ERP_EVENTS_SWEEP_SCHEDULE_ID = 'erp-events-sweep';
/** Records written this long before the last sweep's start are read again (clocks, long transactions). */
const OVERLAP_MS = 2 * 60_000;
const SWEPT = EVENT_RULES.filter((r) => r.model === 'account.move');
const FIELDS = [...new Set(SWEPT.flatMap((r) => r.fields))];

export interface SweepDeps {
  pool: pg.Pool;
  /**
   * Records written less than this long ago are left to the next sweep: Odoo's own post of a fresh
   * change may still be on its way to the ingestion (ERP_EVENTS_SWEEP_SETTLE, 30 s).
   */
  settleMs: number;
  erpUrl: string;
  secretsKey: string;
  eventsUrl: string;
  eventsKey: () => Promise<string>;
}

export interface TenantSweep {
  tenant: string;
  /** Records read. */
  read: number;
  /** Events published by this sweep (the ERP's post had not arrived). */
  published: number;
  /** The first sweep: what the ERP shows was recorded as seen, nothing published. */
  baseline: boolean;
  error?: string;
}

/** Odoo's datetime format (UTC, no zone) for a domain on write_date. */
const odooDatetime = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');

/** The changes a customer invoice's current state implies (the rules' events, same ids). */
export function impliedChanges(record: Record<string, unknown>): ErpChange[] {
  const payload = { ...record, _model: 'account.move', _id: record.id as number };
  return SWEPT.map((rule) => odooChange(rule.type, payload)).filter((c): c is ErpChange => typeof c !== 'string');
}

export async function sweepTenant(deps: SweepDeps, t: RoutedTenant): Promise<TenantSweep> {
  const started = new Date();
  const last = await deps.pool.query<{ swept_from: Date }>(
    'SELECT swept_from FROM erp_event_sweeps WHERE tenant = $1',
    [t.tenant],
  );
  const baseline = last.rowCount === 0;
  const credentials = await loadErpApiCredentials(deps.pool, deps.secretsKey, t.tenant);
  if (!credentials) return { tenant: t.tenant, read: 0, published: 0, baseline, error: 'no API user yet' };
  const erp = erpClientFor({ baseUrl: deps.erpUrl, host: t.host, db: t.database, version: t.erpVersion }, credentials);
  const domain: unknown[] = [
    ['move_type', 'in', ['out_invoice', 'out_refund']],
    '|',
    ['state', '=', 'posted'],
    ['payment_state', 'in', ['paid', 'in_payment']],
  ];
  const until = new Date(started.getTime() - deps.settleMs);
  if (!baseline) {
    domain.unshift(
      ['write_date', '>=', odooDatetime(new Date(last.rows[0]!.swept_from.getTime() - OVERLAP_MS))],
      ['write_date', '<', odooDatetime(until)],
    );
  }
  const records = await erp.executeKw<Record<string, unknown>[]>('account.move', 'search_read', [domain], {
    fields: FIELDS,
    order: 'id',
  });
  const changes = records.flatMap(impliedChanges);
  let published = 0;
  if (baseline) {
    await markSeen(
      deps.pool,
      t.tenant,
      changes.map((c) => c.id),
      'baseline',
    );
  } else {
    const seen = await deps.pool.query<{ event_id: string }>(
      'SELECT event_id FROM erp_events_seen WHERE tenant = $1 AND event_id = ANY($2)',
      [t.tenant, changes.map((c) => c.id)],
    );
    const known = new Set(seen.rows.map((r) => r.event_id));
    const key = changes.some((c) => !known.has(c.id)) ? await deps.eventsKey() : '';
    for (const change of changes.filter((c) => !known.has(c.id))) {
      // published first, then recorded: a crash in between publishes again, and the events service's de-duplication holds
      const e = erpCloudEvent(t.tenant, t.workspace, { ...change, time: started.toISOString() });
      await publishEvent({ eventsUrl: deps.eventsUrl, apiKey: key }, e);
      await markSeen(deps.pool, t.tenant, [change.id], 'sweep');
      published += 1;
    }
  }
  await deps.pool.query(
    `INSERT INTO erp_event_sweeps (tenant, swept_from, swept_at, published) VALUES ($1, $2, now(), $3)
     ON CONFLICT (tenant) DO UPDATE SET swept_from = EXCLUDED.swept_from, swept_at = now(), published = erp_event_sweeps.published + EXCLUDED.published, last_error = NULL`,
    [t.tenant, baseline ? started : until, published],
  );
  return { tenant: t.tenant, read: records.length, published, baseline };
}

/** Every tenant with a route (its ERP answers), a few at a time; one tenant's failure is recorded, not thrown. */
export async function sweepAll(
  deps: SweepDeps,
  opts: { concurrency?: number; heartbeat?: () => void } = {},
): Promise<TenantSweep[]> {
  const limit = pLimit(opts.concurrency ?? 4);
  const results = await Promise.all(
    (await routedTenants(deps.pool)).map((t) =>
      limit(async (): Promise<TenantSweep> => {
        try {
          return await sweepTenant(deps, t);
        } catch (err) {
          const error = (err as Error).message.slice(0, 500);
          await deps.pool
            .query('UPDATE erp_event_sweeps SET last_error = $2 WHERE tenant = $1', [t.tenant, error])
            .catch(() => {});
          return { tenant: t.tenant, read: 0, published: 0, baseline: false, error };
        } finally {
          opts.heartbeat?.();
        }
      }),
    ),
  );
  return results; // by tenant name, as routedTenants lists them
}

/** The schedule; the worker ensures it at start-up. */
export function ensureErpEventSweepSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; scheduleId?: string },
): Promise<ScheduleOutcome> {
  return ensureIntervalSchedule(client, {
    scheduleId: opts.scheduleId ?? ERP_EVENTS_SWEEP_SCHEDULE_ID,
    everyMs: opts.everyMs,
    workflowType: 'sweepErpEvents',
    taskQueue: opts.taskQueue,
    summary: 'Publish the invoice and payment events the tenant ERPs posted but the platform missed',
    note: `ERP events catch-up every ${Math.round(opts.everyMs / 1000)} s (ERP_EVENTS_SWEEP_INTERVAL)`,
  });
}
