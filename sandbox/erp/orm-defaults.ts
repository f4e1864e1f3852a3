/**
 * What Odoo fills in when records are created (field defaults, related and computed fields), and
 * the constraints it checks on them, for the models the platform creates records of.
 */
import { randomBytes } from 'node:crypto';
import type { ModelDef } from './models.js';
import { pyRepr } from './domain.js';
import { missingError, validationError } from './odoo-errors.js';
import { modelsFor, type OrmContext } from './orm-context.js';

/** What Odoo's field defaults and related fields fill in when a record of these models is created. */
export async function createDefaults(
  ctx: OrmContext,
  model: ModelDef,
  columns: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (model.name === 'auth.oauth.provider') return oauthProviderDefaults();
  if (model.name !== 'account.bank.statement.line') return {};
  // company_id is related to the journal's company (journal_id is required, checked before)
  const journal = await ctx.db.query<{ company_id: number | null }>(
    'SELECT company_id FROM account_journal WHERE id = $1',
    [columns.journal_id],
  );
  if (!journal.rows[0])
    throw missingError(`Record does not exist or has been deleted.
(Record: account.journal(${pyRepr(columns.journal_id)},), User: ${ctx.uid})`);
  return {
    company_id: journal.rows[0].company_id,
    is_reconciled: false,
    amount_residual: columns.amount,
    internal_index: `${String(columns.date).replace(/-/g, '')}${Date.now()}`,
  };
}
/** auth_oauth's and OCA auth_oidc's field defaults (a random PKCE verifier per provider, as `secrets.token_urlsafe(32)`). */
function oauthProviderDefaults(): Record<string, unknown> {
  return {
    flow: 'access_token',
    scope: 'openid profile email',
    enabled: false,
    sequence: 10,
    css_class: 'fa fa-fw fa-sign-in text-primary',
    code_verifier: randomBytes(32).toString('base64url'),
  };
}

/**
 * An invoice created with lines (`invoice_line_ids: [[0, 0, {quantity, price_unit}]]`, no taxes):
 * the stand-in keeps the totals Odoo computes from them, a draft with number "/".
 */
export function invoiceDefaults(raw: unknown): unknown {
  const { invoice_line_ids: lines, ...vals } = (raw ?? {}) as Record<string, unknown>;
  if (!Array.isArray(lines)) return raw;
  const total = lines.reduce((sum: number, cmd) => {
    const line =
      Array.isArray(cmd) && cmd[0] === 0 ? (cmd[2] as { quantity?: number; price_unit?: number }) : undefined;
    return sum + (line ? (line.quantity ?? 1) * (line.price_unit ?? 0) : 0);
  }, 0);
  const sign = vals.move_type === 'out_refund' ? -1 : 1;
  return {
    name: '/',
    state: 'draft',
    payment_state: 'not_paid',
    amount_untaxed: total,
    amount_tax: 0,
    amount_total: total,
    amount_residual: total,
    amount_untaxed_signed: sign * total,
    amount_total_signed: sign * total,
    amount_residual_signed: sign * total,
    ...vals,
  };
}

/** Odoo's message for a NOT NULL violation (odoo/service/model.py), a ValidationError: fault 2. */
export const mandatoryField = (model: ModelDef, name: string) =>
  validationError(
    'The operation cannot be completed:\n- Create/update: a mandatory field is not set.\n- Delete: another model requires the record being deleted. If possible, archive it instead.\n\n' +
      `Model: ${model.description} (${model.name})\nField: ${model.fields[name]?.string ?? name} (${name})\n`,
  );

/** res.users defaults as Odoo sets them: the creator's company, that company as the only allowed one, internal user. */
export async function userDefaults(ctx: OrmContext, vals: unknown): Promise<unknown> {
  if (!vals || typeof vals !== 'object' || Array.isArray(vals)) return vals;
  const v = { ...(vals as Record<string, unknown>) };
  const groupsField = ctx.version === '19' ? 'group_ids' : 'groups_id';
  v.active ??= true;
  v.share ??= false; // computed in Odoo: not an internal user → share
  v.company_id ??= ctx.companyIds[0] ?? false;
  v.company_ids ??= v.company_id ? [[6, 0, [v.company_id]]] : [];
  if (v[groupsField] === undefined) {
    const user = await xmlidRecord(ctx, 'base', 'group_user');
    v[groupsField] = user ? [[6, 0, [user]]] : [];
  }
  return v;
}

async function xmlidRecord(ctx: OrmContext, module: string, name: string): Promise<number | undefined> {
  const res = await ctx.db.query<{ res_id: number }>(
    'SELECT res_id FROM ir_model_data WHERE module = $1 AND name = $2',
    [module, name],
  );
  return res.rows[0]?.res_id;
}

/** res.users inherits res.partner: a new user without partner gets one named after it. */
export async function createUserPartner(ctx: OrmContext, vals: Record<string, unknown>): Promise<number> {
  const name = vals.name;
  if (typeof name !== 'string' || !name) throw mandatoryField(modelsFor(ctx.version)['res.users']!, 'name');
  const email =
    typeof vals.email === 'string'
      ? vals.email
      : typeof vals.login === 'string' && vals.login.includes('@')
        ? vals.login
        : null;
  const res = await ctx.db.query<{ id: number }>(
    `INSERT INTO res_partner (name, complete_name, email, is_company, active, customer_rank, supplier_rank, company_id)
     VALUES ($1, $1, $2, false, true, 0, 0, $3) RETURNING id`,
    [name, email, typeof vals.company_id === 'number' ? vals.company_id : null],
  );
  return res.rows[0]!.id;
}

/** Odoo's constraint: a user's main company is one of its allowed companies. */
export async function checkUserCompanies(ctx: OrmContext, uid: number): Promise<void> {
  const res = await ctx.db.query<{ ok: boolean; login: string; company: string | null }>(
    `SELECT u.login, c.name AS company,
            EXISTS (SELECT 1 FROM res_company_users_rel r WHERE r.user_id = u.id AND r.cid = u.company_id) AS ok
       FROM res_users u LEFT JOIN res_company c ON c.id = u.company_id WHERE u.id = $1`,
    [uid],
  );
  const row = res.rows[0];
  if (row && !row.ok)
    throw validationError(
      `Company ${row.company ?? '?'} is not in the allowed companies for user ${row.login} (${row.company ?? '?'}).`,
    );
}
