/**
 * A customer invoice made and posted in a tenant's ERP as its accountant would (the tenant's
 * `admin`, Odoo's web session): `create` with one line, then `action_post` (the Confirm button).
 * The ERP's own automation rule "Plana: invoice.posted" (domain/erp-events/automation-rules.ts)
 * then posts the change to the event ingestion, and the webhook dispatcher delivers it: the path a
 * real invoice takes.
 */
import { adminSession, type ErpApiUserDeps } from './admin-session.js';

export interface PostedInvoice {
  id: number;
  name: string;
  amountTotal: number;
  currency: string;
  partner: string;
}

const many2one = (v: unknown): [number, string] | undefined =>
  Array.isArray(v) && typeof v[0] === 'number' ? [v[0], String(v[1])] : undefined;

/** Posts a customer invoice of `amount` in `database`, billed to the customer of its latest customer invoice. */
export async function postCustomerInvoice(
  deps: ErpApiUserDeps,
  opts: { database: string; amount: number; label: string },
): Promise<PostedInvoice> {
  const { session } = await adminSession(deps, opts.database);
  const [latest] = await session.callKw<Record<string, unknown>[]>(
    'account.move',
    'search_read',
    [[['move_type', '=', 'out_invoice']]],
    {
      fields: ['partner_id', 'journal_id', 'company_id', 'currency_id'],
      limit: 1,
      order: 'id desc',
    },
  );
  const partner = many2one(latest?.partner_id);
  if (!latest || !partner)
    throw new Error(`the ERP of ${opts.database} has no customer invoice to take a customer from`);
  const id = await session.callKw<number>('account.move', 'create', [
    {
      move_type: 'out_invoice',
      partner_id: partner[0],
      journal_id: many2one(latest.journal_id)?.[0],
      company_id: many2one(latest.company_id)?.[0],
      currency_id: many2one(latest.currency_id)?.[0],
      invoice_date: new Date().toISOString().slice(0, 10),
      invoice_line_ids: [[0, 0, { name: opts.label, quantity: 1, price_unit: opts.amount }]],
    },
  ]);
  await session.callKw('account.move', 'action_post', [[id]]);
  const [posted] = await session.callKw<Record<string, unknown>[]>('account.move', 'read', [
    [id],
    ['name', 'amount_total', 'currency_id', 'state'],
  ]);
  if (posted?.state !== 'posted')
    throw new Error(`invoice ${id} in ${opts.database} is ${String(posted?.state)} after action_post`);
  return {
    id,
    name: String(posted.name),
    amountTotal: Number(posted.amount_total),
    currency: many2one(posted.currency_id)?.[1] ?? '',
    partner: partner[1],
  };
}
