/**
 * The platform's tier catalogue: what each tier (§2.3: starter, pro, enterprise) is called and
 * which ERP modules its tenants run. The ERP templates and from-scratch installs get these module
 * lists (`odoo-bin -i`, domain/erp/odoo-bin.ts erpInstallModules; the stand-in's alike), the tenant ERPs' `/svc/saas/tiers` and `/svc/saas/tier/<code>/modules`
 * answer from them, and a subscription's tier comes from its Stripe price's `lookup_key`.
 * Imports nothing, so any layer can use it.
 */
import type { Tier } from '../tenants/types.js';

export interface ErpModule {
  /** The technical name (`ir.module.module` name). */
  name: string;
  /** The display name (`shortdesc`). */
  title: string;
  /** True for an application (shown in the Apps menu), false for a technical module. */
  application: boolean;
}

const m = (name: string, title: string, application: boolean): ErpModule => ({ name, title, application });

const starter = [
  m('base', 'Base', false),
  m('web', 'Web', false),
  m('mail', 'Discuss', true),
  m('contacts', 'Contacts', true),
  m('account', 'Invoicing', true),
  // Odoo's automation rules: provisioning makes the rules that post invoice, payment and stock
  // changes to the platform's event ingestion (domain/erp-events/automation-rules.ts)
  m('base_automation', 'Automation Rules', false),
];
const pro = [
  ...starter,
  m('sale_management', 'Sales', true),
  m('purchase', 'Purchase', true),
  m('crm', 'CRM', true),
  m('stock', 'Inventory', true),
];
const enterprise = [
  ...pro,
  m('mrp', 'Manufacturing', true),
  m('project', 'Project', true),
  m('hr', 'Employees', true),
  m('hr_expense', 'Expenses', true),
  m('website', 'Website', true),
];

export interface TierInfo {
  code: Tier;
  name: string;
  /** Each tier has the modules of the one below, plus its own. */
  modules: ErpModule[];
}

export const TIERS: readonly TierInfo[] = [
  { code: 'starter', name: 'Starter', modules: starter },
  { code: 'pro', name: 'Pro', modules: pro },
  { code: 'enterprise', name: 'Enterprise', modules: enterprise },
];

export function tierInfo(code: string): TierInfo | undefined {
  return TIERS.find((t) => t.code === code);
}

export const isTier = (s: unknown): s is Tier => typeof s === 'string' && tierInfo(s) !== undefined;

/**
 * Every module of the catalogue, once (the biggest tier holds them all): what a tenant ERP lists in
 * `ir.module.module`, installed or not, so that a tier change can install the new tier's modules.
 */
export const CATALOGUE_MODULES: readonly ErpModule[] = enterprise;

/**
 * The module set a tier change brings a tenant to (DESIGN §5): the new tier's modules are
 * installed; on a downgrade the modules of the higher tier stay installed (uninstalling an Odoo
 * module drops its tables and the customer's records in them), so only the tier's own limits change.
 */
export function tierModuleNames(code: Tier): string[] {
  return (tierInfo(code)?.modules ?? []).map((mod) => mod.name);
}
