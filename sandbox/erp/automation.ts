/**
 * The stand-in's version of Odoo's automation rules (`base_automation`, action "Send Webhook
 * Notification"): after a write through XML-RPC, the record changes the platform cares about are
 * posted to the platform's event ingestion, as a real Odoo configured by provisioning would:
 *   account.move (customer invoice) set to posted → `invoice.posted`
 *   account.move payment_state set to paid / in_payment → `payment.received`
 * (`stock.changed`, a stock.move set to done, needs the stock model, which this stand-in lacks.)
 * On real Odoo, provisioning creates these rules; see README "Tenant webhooks".
 */
import type pg from 'pg';

export interface ErpEventsTarget {
  /** The events service (its /api/v1/ingest/erp/<tenant>). */
  url: string;
  /** The tenant's ingestion token. */
  token(tenant: string): string | Promise<string>;
}

interface Change {
  type: 'invoice.posted' | 'payment.received';
  id: string;
  data: Record<string, unknown>;
}

const ids = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => typeof x === 'number') : typeof v === 'number' ? [v] : []);

/** The changes one successful `execute_kw` call made (only account.move writes and creates matter). */
export async function changesOf(db: pg.Pool, model: string, method: string, args: unknown[], kwargs: Record<string, unknown>, result: unknown): Promise<Change[]> {
  if (model !== 'account.move' || (method !== 'write' && method !== 'create')) return [];
  const touched = method === 'write' ? ids(args[0] ?? kwargs.ids) : ids(result);
  const vals = (method === 'write' ? (args[1] ?? kwargs.vals) : Array.isArray(args[0]) ? args[0][0] : (args[0] ?? kwargs.vals_list)) as Record<string, unknown> | undefined;
  if (!vals || touched.length === 0) return [];
  const posted = vals.state === 'posted';
  const paid = vals.payment_state === 'paid' || vals.payment_state === 'in_payment';
  if (!posted && !paid) return [];
  const { rows } = await db.query<{ id: number; name: string | null; move_type: string; amount_total: string | null; amount_residual: string | null; partner_id: number | null; payment_state: string | null; invoice_date: Date | null }>(
    `SELECT id, name, move_type, amount_total, amount_residual, partner_id, payment_state, invoice_date FROM account_move WHERE id = ANY($1) AND move_type IN ('out_invoice', 'out_refund')`,
    [touched],
  );
  const changes: Change[] = [];
  for (const r of rows) {
    const data = { id: r.id, name: r.name, moveType: r.move_type, partnerId: r.partner_id, amountTotal: Number(r.amount_total ?? 0) };
    if (posted) changes.push({ type: 'invoice.posted', id: `account.move:${r.id}:posted`, data: { ...data, invoiceDate: r.invoice_date?.toISOString().slice(0, 10) ?? null } });
    if (paid) changes.push({ type: 'payment.received', id: `account.move:${r.id}:${r.payment_state}`, data: { ...data, paymentState: r.payment_state, amountResidual: Number(r.amount_residual ?? 0) } });
  }
  return changes;
}

/** Posts the changes; a refused or failed post is logged, never fails the XML-RPC call (as in Odoo). */
export async function postChanges(target: ErpEventsTarget, tenant: string, changes: Change[], warn: (msg: string) => void): Promise<void> {
  for (const change of changes) {
    try {
      const res = await fetch(new URL(`/api/v1/ingest/erp/${tenant}`, target.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await target.token(tenant)}` },
        body: JSON.stringify({ ...change, time: new Date().toISOString() }),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 202) warn(`event ingestion answered ${res.status} to ${change.type} ${change.id}`);
    } catch (err) {
      warn(`event ingestion unreachable: ${(err as Error).message}`);
    }
  }
}
