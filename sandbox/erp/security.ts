/**
 * Odoo's access rights as the stand-in enforces them, by group external id (never by group id):
 * the access control lists (`ir.model.access`, from base's and account's
 * security/ir.model.access.csv) and the multi-company record rules. A user's groups are its own
 * plus every group they imply (`res.groups.implied_ids`), transitively.
 *
 * What the platform relies on, as real Odoo 18 does it:
 * - `base.group_user` (internal user) reads contacts, companies and currencies but cannot write a
 *   contact (that needs `base.group_partner_manager`) nor read `ir.model.data`;
 * - `account.group_account_readonly` reads accounting (moves, items, journals, statement lines)
 *   and writes nothing: a write is Odoo's AccessError (fault 4) naming the groups that may;
 * - records of a company the user is not linked to (`res.users.company_ids`) are invisible, so a
 *   user without companies sees no accounting at all.
 */
import type { ModelDef } from './models.js';
import { accessError } from './odoo-errors.js';

export type Mode = 'read' | 'write' | 'create' | 'unlink';
type Perms = 'r' | 'rwcu';

/** group external id → its label (as Odoo's `full_name`) and model → rights. */
export const ACCESS: Record<string, { label: string; models: Record<string, Perms> }> = {
  'base.group_user': {
    label: 'Role / User',
    models: {
      'res.partner': 'r',
      'res.company': 'r',
      'res.currency': 'r',
      'res.users': 'r',
      'res.groups': 'r',
      'ir.module.module': 'r',
      'ir.model': 'r',
      'ir.model.fields': 'r',
    },
  },
  'base.group_partner_manager': { label: 'Extra Rights / Contact Creation', models: { 'res.partner': 'rwcu' } },
  'base.group_erp_manager': {
    label: 'Administration / Access Rights',
    models: { 'res.users': 'rwcu', 'res.groups': 'rwcu', 'ir.model.data': 'rwcu', 'res.company': 'rwcu' },
  },
  'base.group_system': {
    label: 'Administration / Settings',
    // (stock.move: Odoo gives it to Inventory's groups; the stand-in has no Inventory groups, its admin has them all)
    models: {
      'ir.module.module': 'rwcu',
      'res.currency': 'rwcu',
      'ir.config_parameter': 'rwcu',
      'auth.oauth.provider': 'rwcu',
      'base.automation': 'rwcu',
      'ir.actions.server': 'rwcu',
      'stock.move': 'rwcu',
    },
  },
  'account.group_account_readonly': {
    label: 'Accounting / Read-only',
    models: {
      'account.move': 'r',
      'account.move.line': 'r',
      'account.journal': 'r',
      'account.account': 'r',
      'account.bank.statement.line': 'r',
    },
  },
  'account.group_account_invoice': {
    label: 'Accounting / Billing',
    models: {
      'account.move': 'rwcu',
      'account.move.line': 'rwcu',
      'account.journal': 'r',
      'account.account': 'r',
      'account.bank.statement.line': 'r',
    },
  },
  // Bookkeeper: account's ir.model.access.csv gives it the bank statement lines (an importer's right)
  'account.group_account_user': {
    label: 'Accounting / Bookkeeper',
    models: {
      'account.move': 'rwcu',
      'account.move.line': 'rwcu',
      'account.journal': 'r',
      'account.account': 'r',
      'account.bank.statement.line': 'rwcu',
    },
  },
  'account.group_account_manager': {
    label: 'Accounting / Administrator',
    models: {
      'account.journal': 'rwcu',
      'account.account': 'rwcu',
      'account.bank.statement.line': 'rwcu',
      'res.currency': 'rwcu',
    },
  },
};

const documentKind: Record<Mode, string> = { read: 'read', write: 'modify', create: 'create', unlink: 'delete' };

/** ACL check (Odoo's `ir.model.access.check`): AccessError with the groups that are allowed. */
export function checkAccess(groups: ReadonlySet<string>, model: ModelDef, mode: Mode): void {
  const allows = (xmlid: string) => {
    const perms = ACCESS[xmlid]?.models[model.name];
    return perms !== undefined && (mode === 'read' || perms === 'rwcu');
  };
  if ([...groups].some(allows)) return;
  const allowed = Object.keys(ACCESS)
    .filter(allows)
    .map((x) => `\t- ${ACCESS[x]!.label}`);
  throw accessError(
    `You are not allowed to ${documentKind[mode]} '${model.description}' (${model.name}) records.\n\n` +
      (allowed.length
        ? `This operation is allowed for the following groups:\n${allowed.join('\n')}`
        : 'No group currently allows this operation.') +
      '\n\nContact your administrator to request access if necessary.',
  );
}

/** The multi-company record rule of `model` as a domain, for a user linked to `companyIds`. */
export function companyRule(model: ModelDef, companyIds: readonly number[]): unknown[] {
  const ids = [...companyIds];
  if (model.name === 'res.company') return [['id', 'in', ids]];
  if (!model.fields.company_id || model.name === 'res.users') return [];
  // shared records (no company) are visible to all, as Odoo's `company_id in company_ids + [False]`
  if (model.name === 'res.partner' || model.name === 'account.account')
    return ['|', ['company_id', '=', false], ['company_id', 'in', ids]];
  return [['company_id', 'in', ids]];
}
