/**
 * Deterministic demo accounting for a template database, relative to a given day: a company,
 * customers and vendors, twelve months of customer invoices, credit notes and vendor bills (draft,
 * posted, cancelled; paid, partially paid, not paid, overdue), their journal items, the bank
 * payments with their bank statement lines (the most recent ones not yet reconciled), an opening
 * balance, and the module list (the modules asked for installed, the addons path's others not). The
 * tier (`starter`, `pro`, `enterprise`: the template's name) sets the company's size and name. Same
 * tier, version, modules and day → same rows.
 */
import { irModelRows } from './models.js';
import { AUTH_OIDC_MODULE, type ErpVersion } from './odoo-series.js';
import { INVITATION_SCOPE_KEY } from './oauth-signup.js';

/** The template flavours: a bigger company for a bigger tier. */
export type Tier = 'starter' | 'pro' | 'enterprise';

export type Row = Record<string, string | number | boolean | null>;
export type Tables = Record<string, Row[]>;

/** mulberry32: a small seeded generator, good enough for demo data. */
function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (day: string, n: number) => {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return isoDay(d);
};
const round2 = (n: number) => Math.round(n * 100) / 100;

type Random = ReturnType<typeof seededRandom>;
type InvoiceKind = 'out_invoice' | 'out_refund' | 'in_invoice' | 'in_refund';

const INVOICE_PREFIX: Record<InvoiceKind, string> = {
  out_invoice: 'INV',
  out_refund: 'RINV',
  in_invoice: 'BILL',
  in_refund: 'RBILL',
};

/** Payments within these last days are often not reconciled yet. */
const RECENT_PAYMENT_DAYS = 12;

/** An invoice's amounts: untaxed (a credit note about a third of an invoice), 19 % tax, total. */
function invoiceAmounts(rnd: Random, scale: number, customer: boolean, refund: boolean) {
  const untaxed = round2(rnd.int(150, customer ? 4200 : 2600) * scale * (refund ? 0.3 : 1) + rnd.int(0, 99) / 100);
  const tax = round2(untaxed * 0.19);
  return { untaxed, tax, total: round2(untaxed + tax) };
}

/**
 * How much of a posted invoice is paid by `today`, and when: the older the invoice the likelier it is
 * paid in full; a credit note is never partly paid.
 */
function settleInvoice(
  rnd: Random,
  o: { today: string; day: string; terms: number; total: number; refund: boolean },
): { residual: number; paymentState: string; paidOn: string | null } {
  const age = (Date.parse(o.today) - Date.parse(o.day)) / 86_400_000;
  const p = rnd.next();
  const payProbability = age > 75 ? 0.93 : age > 40 ? 0.7 : age > 15 ? 0.4 : 0.15;
  const paidWithin = (minDays: number, maxDays: number) => {
    const paidOn = addDays(o.day, rnd.int(minDays, Math.max(minDays, Math.min(maxDays, Math.floor(age)))));
    return paidOn > o.today ? o.today : paidOn;
  };
  if (p < payProbability) return { paidOn: paidWithin(3, o.terms + 10), residual: 0, paymentState: 'paid' };
  if (p < payProbability + 0.1 && !o.refund) {
    const paidOn = paidWithin(1, o.terms);
    return { paidOn, residual: round2(o.total * rnd.pick([0.3, 0.5, 0.6])), paymentState: 'partial' };
  }
  return { residual: o.total, paymentState: 'not_paid', paidOn: null };
}

const tierSize = {
  starter: { customers: 18, vendors: 8, invoicesPerMonth: 5, opening: 25_000, scale: 1 },
  pro: { customers: 32, vendors: 12, invoicesPerMonth: 9, opening: 60_000, scale: 2 },
  enterprise: { customers: 48, vendors: 18, invoicesPerMonth: 14, opening: 150_000, scale: 4 },
} as const;

const companyNames = {
  starter: 'Starter Demo GmbH',
  pro: 'Pro Demo AG',
  enterprise: 'Enterprise Demo Group SE',
} as const;

/** A module of the stand-in's addons path: its technical name, display name, and whether it is an app. */
export interface AddonModule {
  name: string;
  title: string;
  application: boolean;
}

const addon = (name: string, title: string, application: boolean): AddonModule => ({ name, title, application });

/**
 * The stand-in's addons path, as `ir.module.module` lists it after `update_list`: Odoo's modules the
 * platform's tiers use and OCA's auth_oidc (listed as one module with the auth_oauth it extends).
 */
export const STAND_IN_ADDONS: readonly AddonModule[] = [
  addon('base', 'Base', false),
  addon('web', 'Web', false),
  addon('mail', 'Discuss', true),
  addon('contacts', 'Contacts', true),
  addon('account', 'Invoicing', true),
  addon('base_automation', 'Automation Rules', false),
  addon('sale_management', 'Sales', true),
  addon('purchase', 'Purchase', true),
  addon('crm', 'CRM', true),
  addon('stock', 'Inventory', true),
  addon('mrp', 'Manufacturing', true),
  addon('project', 'Project', true),
  addon('hr', 'Employees', true),
  addon('hr_expense', 'Expenses', true),
  addon('website', 'Website', true),
  addon(AUTH_OIDC_MODULE, 'Authentication OpenID Connect', false),
];

/**
 * `ir.module.module` as Odoo lists it: every module of the addons path, those of `installed`
 * installed, the others not (a tier change installs them, domain/erp/tier-modules.ts).
 */
export function moduleRows(installed: ReadonlySet<string>, version: ErpVersion): Row[] {
  return STAND_IN_ADDONS.map((mod, i) => {
    const isInstalled = installed.has(mod.name);
    return {
      id: i + 1,
      name: mod.name,
      shortdesc: mod.title,
      state: isInstalled ? 'installed' : 'uninstalled',
      latest_version: isInstalled ? `${version}.0.1.${i % 4}` : null,
      application: mod.application,
      sequence: 10 + i,
    };
  });
}

const firstNames = [
  'Anna',
  'Ben',
  'Clara',
  'David',
  'Eva',
  'Felix',
  'Greta',
  'Hugo',
  'Ida',
  'Jonas',
  'Lena',
  'Max',
  'Nora',
  'Paul',
  'Rosa',
  'Tom',
];
const companyWords = [
  'Alpine',
  'Baltic',
  'Cedar',
  'Delta',
  'Ember',
  'Fjord',
  'Granite',
  'Harbor',
  'Iris',
  'Juniper',
  'Kestrel',
  'Lumen',
  'Meridian',
  'Nimbus',
  'Orchid',
  'Pioneer',
  'Quarry',
  'Riverside',
  'Summit',
  'Tidal',
];
const companyKinds = [
  'Logistics',
  'Foods',
  'Systems',
  'Consulting',
  'Textiles',
  'Energy',
  'Media',
  'Tools',
  'Labs',
  'Retail',
];
const cities = ['Berlin', 'Hamburg', 'Munich', 'Cologne', 'Vienna', 'Zurich', 'Leipzig', 'Dresden', 'Bremen', 'Graz'];

/**
 * The groups, with the ids and external ids they have in a real Odoo 18 database with `account`
 * installed (so a platform that used fixed ids would get the same wrong groups here as there: 2 and
 * 4 are Access Rights and Settings). The platform finds groups by external id only.
 */
export const GROUPS = {
  internalUser: { id: 1, xmlid: 'base.group_user', name: 'Internal User', implies: [] },
  accessRights: { id: 2, xmlid: 'base.group_erp_manager', name: 'Access Rights', implies: [1] },
  settings: { id: 4, xmlid: 'base.group_system', name: 'Settings', implies: [2, 1] },
  contactCreation: { id: 9, xmlid: 'base.group_partner_manager', name: 'Contact Creation', implies: [] },
  accountingReadonly: {
    id: 22,
    xmlid: 'account.group_account_readonly',
    name: 'Show Accounting Features - Readonly',
    implies: [1],
  },
  accountingBilling: { id: 23, xmlid: 'account.group_account_invoice', name: 'Invoicing', implies: [1] },
  accountingBookkeeper: { id: 25, xmlid: 'account.group_account_user', name: 'Bookkeeper', implies: [23, 22] },
  accountingManager: { id: 26, xmlid: 'account.group_account_manager', name: 'Administrator', implies: [23] },
} as const;
export const ACCOUNTS = {
  receivable: 1,
  payable: 2,
  bank: 3,
  cash: 4,
  income: 5,
  expense: 6,
  taxReceived: 7,
  taxPaid: 8,
  equity: 9,
  suspense: 10,
} as const;
export const JOURNALS = { sale: 1, purchase: 2, bank: 3, cash: 4, misc: 5 } as const;

export function demoData(opts: {
  tier: Tier;
  version: ErpVersion;
  /** The modules installed (`odoo-bin -i`); a module not on the addons path is an error, as in Odoo. */
  modules: readonly string[];
  today: string;
  adminPasswordHash: string;
}): Tables {
  const { tier, version, today } = opts;
  const unknown = opts.modules.filter((name) => !STAND_IN_ADDONS.some((mod) => mod.name === name));
  if (unknown.length) throw new Error(`the stand-in's addons path has no module ${unknown.join(', ')}`);
  const installed = new Set(opts.modules);
  const size = tierSize[tier];
  const rnd = seededRandom(
    [...`${tier}:${version}`].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261),
  );
  const now = `${today} 08:00:00`;
  const t: Tables = {
    res_currency: [{ id: 1, name: 'EUR', symbol: '€', active: true }],
    res_company: [
      {
        id: 1,
        name: companyNames[tier],
        sequence: 10,
        currency_id: 1,
        partner_id: 1,
        email: `info@${tier}.example.com`,
        vat: 'DE123456789',
      },
    ],
    res_partner: [],
    res_groups: Object.values(GROUPS).map((g) => ({ id: g.id, name: g.name })),
    res_groups_implied_rel: Object.values(GROUPS).flatMap((g) => g.implies.map((hid) => ({ gid: g.id, hid }))),
    ir_model_data: [
      ...Object.values(GROUPS).map((g) => ({
        module: g.xmlid.split('.')[0]!,
        name: g.xmlid.split('.')[1]!,
        model: 'res.groups',
        res_id: g.id,
        noupdate: false,
      })),
      { module: 'base', name: 'main_company', model: 'res.company', res_id: 1, noupdate: true },
      { module: 'base', name: 'user_admin', model: 'res.users', res_id: 2, noupdate: true },
    ].map((row, i) => ({ id: i + 1, ...row })),
    res_users: [],
    res_groups_users_rel: [],
    res_company_users_rel: [],
    // a template's identity; every clone gets its own (domain/erp/tenant-database.ts), as Odoo's duplication
    ir_config_parameter: [
      {
        id: 1,
        key: 'database.uuid',
        value: `00000000-0000-4000-8000-${String(
          Math.abs([...`${tier}${version}`].reduce((h, c) => h * 31 + c.charCodeAt(0), 7)),
        )
          .padStart(12, '0')
          .slice(-12)}`,
      },
      { id: 2, key: 'database.secret', value: `template-secret-${tier}-${version}` },
      { id: 3, key: 'database.create_date', value: `${today} 00:00:00` },
      // auth_signup's install data (a dependency of auth_oidc): free sign-up, as on real Odoo 18
      { id: 4, key: INVITATION_SCOPE_KEY, value: 'b2c' },
    ],
    account_account: [
      {
        id: ACCOUNTS.receivable,
        code: '121000',
        name: 'Account Receivable',
        account_type: 'asset_receivable',
        reconcile: true,
      },
      {
        id: ACCOUNTS.payable,
        code: '211000',
        name: 'Account Payable',
        account_type: 'liability_payable',
        reconcile: true,
      },
      { id: ACCOUNTS.bank, code: '101401', name: 'Bank', account_type: 'asset_cash', reconcile: false },
      { id: ACCOUNTS.cash, code: '101501', name: 'Cash', account_type: 'asset_cash', reconcile: false },
      { id: ACCOUNTS.income, code: '400000', name: 'Product Sales', account_type: 'income', reconcile: false },
      { id: ACCOUNTS.expense, code: '600000', name: 'Expenses', account_type: 'expense', reconcile: false },
      {
        id: ACCOUNTS.taxReceived,
        code: '251000',
        name: 'Tax Received',
        account_type: 'liability_current',
        reconcile: false,
      },
      { id: ACCOUNTS.taxPaid, code: '131000', name: 'Tax Paid', account_type: 'asset_current', reconcile: false },
      {
        id: ACCOUNTS.equity,
        code: '999999',
        name: 'Undistributed Profits/Losses',
        account_type: 'equity',
        reconcile: false,
      },
      {
        id: ACCOUNTS.suspense,
        code: '101402',
        name: 'Bank Suspense Account',
        account_type: 'asset_current',
        reconcile: false,
      },
    ],
    account_journal: [
      {
        id: JOURNALS.sale,
        name: 'Customer Invoices',
        code: 'INV',
        type: 'sale',
        sequence: 5,
        default_account_id: ACCOUNTS.income,
        company_id: 1,
        active: true,
      },
      {
        id: JOURNALS.purchase,
        name: 'Vendor Bills',
        code: 'BILL',
        type: 'purchase',
        sequence: 6,
        default_account_id: ACCOUNTS.expense,
        company_id: 1,
        active: true,
      },
      {
        id: JOURNALS.bank,
        name: 'Bank',
        code: 'BNK1',
        type: 'bank',
        sequence: 10,
        default_account_id: ACCOUNTS.bank,
        company_id: 1,
        active: true,
      },
      {
        id: JOURNALS.cash,
        name: 'Cash',
        code: 'CSH1',
        type: 'cash',
        sequence: 11,
        default_account_id: ACCOUNTS.cash,
        company_id: 1,
        active: true,
      },
      {
        id: JOURNALS.misc,
        name: 'Miscellaneous Operations',
        code: 'MISC',
        type: 'general',
        sequence: 9,
        default_account_id: null,
        company_id: 1,
        active: true,
      },
    ],
    account_move: [],
    account_move_line: [],
    account_bank_statement_line: [],
    ir_module_module: moduleRows(installed, version),
    ...irModelRows(version, installed),
  };

  // partners: the company, the admin, customers, vendors
  const partner = (row: Row) =>
    t.res_partner!.push({
      customer_rank: 0,
      supplier_rank: 0,
      company_id: null,
      active: true,
      phone: null,
      vat: null,
      street: null,
      zip: null,
      city: null,
      email: null,
      ...row,
      complete_name: row.name ?? null,
    });
  partner({ id: 1, name: companyNames[tier], is_company: true, email: `info@${tier}.example.com`, city: 'Berlin' });
  partner({ id: 2, name: 'Mitchell Admin', is_company: false, email: `admin@${tier}.example.com` });
  partner({ id: 3, name: 'OdooBot', is_company: false, active: false });
  const customers: number[] = [];
  const vendors: number[] = [];
  let partnerId = 10;
  for (let i = 0; i < size.customers + size.vendors; i++) {
    const isVendor = i >= size.customers;
    const name = `${companyWords[i % companyWords.length]} ${companyKinds[(i * 7) % companyKinds.length]}${i >= companyWords.length ? ` ${Math.floor(i / companyWords.length) + 1}` : ''}`;
    const id = partnerId++;
    partner({
      id,
      name,
      is_company: true,
      email: rnd.chance(0.85)
        ? `${firstNames[i % firstNames.length]!.toLowerCase()}@${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.example`
        : null,
      phone: rnd.chance(0.7) ? `+49 30 ${rnd.int(1000000, 9999999)}` : null,
      vat: rnd.chance(0.6) ? `DE${rnd.int(100000000, 999999999)}` : null,
      street: `${rnd.pick(['Hauptstraße', 'Bahnhofstraße', 'Gartenweg', 'Marktplatz'])} ${rnd.int(1, 120)}`,
      zip: String(rnd.int(10000, 99999)),
      city: rnd.pick(cities),
      customer_rank: isVendor ? 0 : rnd.int(1, 20),
      supplier_rank: isVendor ? rnd.int(1, 10) : 0,
    });
    (isVendor ? vendors : customers).push(id);
  }

  t.res_users!.push(
    { id: 1, login: '__system__', partner_id: 3, company_id: 1, active: false, share: false, password: null },
    {
      id: 2,
      login: 'admin',
      partner_id: 2,
      company_id: 1,
      active: true,
      share: false,
      password: opts.adminPasswordHash,
    },
  );
  for (const g of Object.values(GROUPS)) t.res_groups_users_rel!.push({ gid: g.id, uid: 2 });
  t.res_company_users_rel!.push({ cid: 1, user_id: 1 }, { cid: 1, user_id: 2 });

  // journal entries
  let moveId = 1;
  let lineId = 1;
  let statementLineId = 1;
  const sequences = new Map<string, number>();
  const nextName = (prefix: string, day: string) => {
    const key = `${prefix}/${day.slice(0, 4)}`;
    const n = (sequences.get(key) ?? 0) + 1;
    sequences.set(key, n);
    return `${key}/${String(n).padStart(5, '0')}`;
  };
  const moveBase = {
    ref: null,
    invoice_date: null,
    invoice_date_due: null,
    payment_state: 'not_paid',
    company_id: 1,
    currency_id: 1,
    amount_untaxed: 0,
    amount_tax: 0,
    amount_total: 0,
    amount_residual: 0,
    amount_untaxed_signed: 0,
    amount_total_signed: 0,
    amount_residual_signed: 0,
    create_date: now,
    write_date: now,
  };
  const addLine = (
    move: Row,
    row: { account: number; debit: number; credit: number; name: string; residual?: number; maturity?: string | null },
  ) => {
    t.account_move_line!.push({
      id: lineId++,
      move_id: move.id as number,
      move_name: move.name as string,
      name: row.name,
      account_id: row.account,
      partner_id: move.partner_id ?? null,
      journal_id: move.journal_id as number,
      company_id: 1,
      date: move.date as string,
      date_maturity: row.maturity ?? null,
      parent_state: move.state as string,
      debit: round2(row.debit),
      credit: round2(row.credit),
      balance: round2(row.debit - row.credit),
      amount_residual: round2(row.residual ?? 0),
      reconciled: row.residual !== undefined && row.residual === 0,
      create_date: now,
      write_date: now,
    });
  };

  /** A bank payment (an `entry` in the bank journal) with its bank statement line. */
  const addPayment = (
    day: string,
    partnerId: number | null,
    amount: number,
    counterpart: number,
    label: string,
    reconciled: boolean,
  ) => {
    const move: Row = {
      ...moveBase,
      id: moveId++,
      name: nextName('BNK1', day),
      move_type: 'entry',
      state: 'posted',
      payment_state: 'not_paid',
      date: day,
      partner_id: partnerId,
      journal_id: JOURNALS.bank,
      ref: label,
      amount_total: Math.abs(amount),
      amount_total_signed: Math.abs(amount),
    };
    t.account_move!.push(move);
    addLine(move, { account: ACCOUNTS.bank, debit: Math.max(amount, 0), credit: Math.max(-amount, 0), name: label });
    addLine(move, {
      account: reconciled ? counterpart : ACCOUNTS.suspense,
      debit: Math.max(-amount, 0),
      credit: Math.max(amount, 0),
      name: label,
    });
    t.account_bank_statement_line!.push({
      id: statementLineId,
      move_id: move.id as number,
      journal_id: JOURNALS.bank,
      partner_id: partnerId,
      company_id: 1,
      date: day,
      payment_ref: label,
      amount: round2(amount),
      amount_residual: reconciled ? 0 : round2(amount),
      is_reconciled: reconciled,
      internal_index: `${day.replace(/-/g, '')}${String(statementLineId).padStart(10, '0')}`,
      create_date: now,
      write_date: now,
    });
    statementLineId++;
  };

  // opening balance, 13 months back, on the bank and the cash account
  const start = addDays(`${today.slice(0, 8)}01`, -365);
  const opening: Row = {
    ...moveBase,
    id: moveId++,
    name: nextName('MISC', start),
    move_type: 'entry',
    state: 'posted',
    date: start,
    partner_id: null,
    journal_id: JOURNALS.misc,
    ref: 'Opening balance',
    amount_total: size.opening + 500,
    amount_total_signed: size.opening + 500,
  };
  t.account_move!.push(opening);
  addLine(opening, { account: ACCOUNTS.bank, debit: size.opening, credit: 0, name: 'Opening balance' });
  addLine(opening, { account: ACCOUNTS.cash, debit: 500, credit: 0, name: 'Opening balance' });
  addLine(opening, { account: ACCOUNTS.equity, debit: 0, credit: size.opening + 500, name: 'Opening balance' });

  /** An invoice, credit note or bill of `day` with its journal items and, when paid, its bank payment. */
  const invoice = (kind: InvoiceKind, day: string) => {
    const customer = kind.startsWith('out');
    const refund = kind.endsWith('refund');
    const sign = (customer ? 1 : -1) * (refund ? -1 : 1);
    const partnerId = rnd.pick(customer ? customers : vendors);
    const amounts = invoiceAmounts(rnd, size.scale, customer, refund);
    const terms = rnd.pick([14, 30, 30, 45]);
    const due = addDays(day, terms);
    const roll = rnd.next();
    const state = roll < 0.07 ? 'draft' : roll < 0.1 ? 'cancel' : 'posted';
    const settlement =
      state === 'posted'
        ? settleInvoice(rnd, { today, day, terms, total: amounts.total, refund })
        : { residual: amounts.total, paymentState: 'not_paid', paidOn: null };
    const move: Row = {
      ...moveBase,
      id: moveId++,
      name: state === 'draft' ? '/' : nextName(INVOICE_PREFIX[kind], day),
      ref: customer ? null : `REF-${rnd.int(10000, 99999)}`,
      move_type: kind,
      state,
      payment_state: settlement.paymentState,
      date: day,
      invoice_date: day,
      invoice_date_due: due,
      partner_id: partnerId,
      journal_id: customer ? JOURNALS.sale : JOURNALS.purchase,
      amount_untaxed: amounts.untaxed,
      amount_tax: amounts.tax,
      amount_total: amounts.total,
      amount_residual: settlement.residual,
      amount_untaxed_signed: round2(sign * amounts.untaxed),
      amount_total_signed: round2(sign * amounts.total),
      amount_residual_signed: round2(sign * settlement.residual),
    };
    t.account_move!.push(move);
    addInvoiceLines(move, { customer, sign, due, residual: settlement.residual, ...amounts });
    const { paidOn, residual } = settlement;
    if (paidOn) payInvoice(move, { customer, sign, paidOn, residual, total: amounts.total });
  };

  /** Journal items: receivable/payable against income/expense and tax; the debit side is the one of `sign > 0`. */
  const addInvoiceLines = (
    move: Row,
    o: { customer: boolean; sign: number; due: string; untaxed: number; tax: number; total: number; residual: number },
  ) => {
    const dr = (amount: number) => ({ debit: o.sign > 0 ? amount : 0, credit: o.sign > 0 ? 0 : amount });
    const cr = (amount: number) => ({ debit: o.sign > 0 ? 0 : amount, credit: o.sign > 0 ? amount : 0 });
    addLine(move, {
      account: o.customer ? ACCOUNTS.receivable : ACCOUNTS.payable,
      ...dr(o.total),
      name: move.name as string,
      residual: round2(o.sign * o.residual),
      maturity: o.due,
    });
    addLine(move, {
      account: o.customer ? ACCOUNTS.income : ACCOUNTS.expense,
      ...cr(o.untaxed),
      name: o.customer ? 'Services' : 'Supplies',
    });
    addLine(move, { account: o.customer ? ACCOUNTS.taxReceived : ACCOUNTS.taxPaid, ...cr(o.tax), name: '19%' });
  };

  /** The bank payment of a paid part of an invoice; recent ones are often not reconciled yet. */
  const payInvoice = (
    move: Row,
    o: { customer: boolean; sign: number; paidOn: string; total: number; residual: number },
  ) => {
    const paid = round2(o.total - o.residual);
    const recent = (Date.parse(today) - Date.parse(o.paidOn)) / 86_400_000 < RECENT_PAYMENT_DAYS;
    addPayment(
      o.paidOn,
      move.partner_id as number,
      round2(o.sign * paid),
      o.customer ? ACCOUNTS.receivable : ACCOUNTS.payable,
      `${o.customer ? 'Payment' : 'Vendor payment'} ${move.name}`,
      !(recent && rnd.chance(0.6)),
    );
  };

  for (let m = 12; m >= 0; m--) {
    const monthStart = new Date(`${today.slice(0, 8)}01T00:00:00Z`);
    monthStart.setUTCMonth(monthStart.getUTCMonth() - m);
    const first = isoDay(monthStart);
    const last =
      m === 0
        ? today
        : addDays(isoDay(new Date(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth() + 1, 1))), -1);
    const span = (Date.parse(last) - Date.parse(first)) / 86_400_000;
    const count = m === 0 ? Math.max(2, Math.round((size.invoicesPerMonth * (span + 1)) / 30)) : size.invoicesPerMonth;
    const days = Array.from({ length: count }, () => addDays(first, rnd.int(0, span))).sort();
    for (const day of days) invoice('out_invoice', day);
    for (const day of days.filter((_, i) => i % 2 === 0)) invoice('in_invoice', day);
    if (rnd.chance(0.5)) invoice('out_refund', addDays(first, rnd.int(0, span)));
    if (rnd.chance(0.2)) invoice('in_refund', addDays(first, rnd.int(0, span)));
    // bank fees and an unidentified receipt now and then: statement lines waiting for reconciliation
    if (m <= 1)
      addPayment(
        addDays(first, rnd.int(0, span)),
        null,
        -round2(rnd.int(8, 40) + 0.5),
        ACCOUNTS.expense,
        'Bank fees',
        false,
      );
    if (m === 0)
      addPayment(
        last,
        null,
        round2(rnd.int(100, 900) * size.scale),
        ACCOUNTS.receivable,
        'Incoming transfer, reference unknown',
        false,
      );
  }
  // the cash box: small expenses
  for (let i = 0; i < 4; i++) {
    const day = addDays(today, -rnd.int(1, 90));
    const amount = round2(rnd.int(5, 60) + 0.9);
    const move: Row = {
      ...moveBase,
      id: moveId++,
      name: nextName('CSH1', day),
      move_type: 'entry',
      state: 'posted',
      date: day,
      partner_id: null,
      journal_id: JOURNALS.cash,
      ref: 'Office supplies',
      amount_total: amount,
      amount_total_signed: amount,
    };
    t.account_move!.push(move);
    addLine(move, { account: ACCOUNTS.cash, debit: 0, credit: amount, name: 'Office supplies' });
    addLine(move, { account: ACCOUNTS.expense, debit: amount, credit: 0, name: 'Office supplies' });
  }

  // what real databases have and the dashboards must get right (checked against Odoo 18):
  // 1. an overdue customer invoice in a foreign currency (USD in this EUR company): amount_residual
  //    is in USD, amount_residual_signed in EUR; only the latter may be added to EUR figures
  const usd = 2;
  t.res_currency!.push({ id: usd, name: 'USD', symbol: '$', active: true });
  const fx: Row = {
    ...moveBase,
    id: moveId++,
    name: nextName('INV', addDays(today, -50)),
    move_type: 'out_invoice',
    state: 'posted',
    payment_state: 'not_paid',
    date: addDays(today, -50),
    invoice_date: addDays(today, -50),
    invoice_date_due: addDays(today, -20),
    partner_id: customers[0]!,
    journal_id: JOURNALS.sale,
    currency_id: usd,
    amount_untaxed: 1000,
    amount_tax: 190,
    amount_total: 1190,
    amount_residual: 1190,
    amount_untaxed_signed: 920,
    amount_total_signed: 1094.8,
    amount_residual_signed: 1094.8,
  };
  t.account_move!.push(fx);
  addLine(fx, {
    account: ACCOUNTS.receivable,
    debit: 1094.8,
    credit: 0,
    name: fx.name as string,
    residual: 1094.8,
    maturity: fx.invoice_date_due as string,
  });
  addLine(fx, { account: ACCOUNTS.income, debit: 0, credit: 920, name: 'Services (USD)' });
  addLine(fx, { account: ACCOUNTS.taxReceived, debit: 0, credit: 174.8, name: '19%' });
  if (version !== '17') {
    // 2. (18+) a credit-card journal with a card expense, and a customer invoice whose payment is blocked
    t.account_account!.push({
      id: 11,
      code: '201100',
      name: 'Credit Card',
      account_type: 'liability_current',
      reconcile: false,
    });
    t.account_journal!.push({
      id: 6,
      name: 'Credit Card',
      code: 'CCD1',
      type: 'credit',
      sequence: 12,
      default_account_id: 11,
      company_id: 1,
      active: true,
    });
    const card: Row = {
      ...moveBase,
      id: moveId++,
      name: nextName('CCD1', addDays(today, -3)),
      move_type: 'entry',
      state: 'posted',
      date: addDays(today, -3),
      partner_id: null,
      journal_id: 6,
      ref: 'Software subscription',
      amount_total: 120,
      amount_total_signed: 120,
    };
    t.account_move!.push(card);
    addLine(card, { account: 11, debit: 0, credit: 120, name: 'Software subscription' });
    addLine(card, { account: ACCOUNTS.expense, debit: 120, credit: 0, name: 'Software subscription' });
    const blocked: Row = {
      ...moveBase,
      id: moveId++,
      name: nextName('INV', addDays(today, -35)),
      move_type: 'out_invoice',
      state: 'posted',
      payment_state: 'blocked',
      date: addDays(today, -35),
      invoice_date: addDays(today, -35),
      invoice_date_due: addDays(today, -5),
      partner_id: customers[1]!,
      journal_id: JOURNALS.sale,
      amount_untaxed: 500,
      amount_tax: 95,
      amount_total: 595,
      amount_residual: 595,
      amount_untaxed_signed: 500,
      amount_total_signed: 595,
      amount_residual_signed: 595,
    };
    t.account_move!.push(blocked);
    addLine(blocked, {
      account: ACCOUNTS.receivable,
      debit: 595,
      credit: 0,
      name: blocked.name as string,
      residual: 595,
      maturity: blocked.invoice_date_due as string,
    });
    addLine(blocked, { account: ACCOUNTS.income, debit: 0, credit: 500, name: 'Services' });
    addLine(blocked, { account: ACCOUNTS.taxReceived, debit: 0, credit: 95, name: '19%' });
  }
  // 3. a second company, in USD, with its own bank journal and an open invoice (the admin sees both)
  t.res_partner!.push({
    id: 4,
    name: `${companyNames[tier]} US Inc.`,
    complete_name: `${companyNames[tier]} US Inc.`,
    is_company: true,
    customer_rank: 0,
    supplier_rank: 0,
    company_id: null,
    active: true,
    phone: null,
    vat: null,
    street: null,
    zip: null,
    city: 'New York',
    email: null,
  });
  t.res_company!.push({
    id: 2,
    name: `${companyNames[tier]} US Inc.`,
    sequence: 20,
    currency_id: usd,
    partner_id: 4,
    email: `us@${tier}.example.com`,
    vat: null,
  });
  t.res_company_users_rel!.push({ cid: 2, user_id: 2 });
  t.account_account!.push({ id: 12, code: '101410', name: 'Bank (US)', account_type: 'asset_cash', reconcile: false });
  t.account_journal!.push(
    {
      id: 7,
      name: 'Customer Invoices (US)',
      code: 'INVUS',
      type: 'sale',
      sequence: 5,
      default_account_id: ACCOUNTS.income,
      company_id: 2,
      active: true,
    },
    {
      id: 8,
      name: 'Bank (US)',
      code: 'BNKUS',
      type: 'bank',
      sequence: 10,
      default_account_id: 12,
      company_id: 2,
      active: true,
    },
  );
  const us = (row: Row) => ({ ...moveBase, company_id: 2, currency_id: usd, ...row });
  const usOpening: Row = us({
    id: moveId++,
    name: nextName('BNKUS', start),
    move_type: 'entry',
    state: 'posted',
    date: start,
    partner_id: null,
    journal_id: 8,
    ref: 'Opening balance',
    amount_total: 40_000,
    amount_total_signed: 40_000,
  });
  const usInvoice: Row = us({
    id: moveId++,
    name: nextName('INVUS', addDays(today, -2)),
    move_type: 'out_invoice',
    state: 'posted',
    payment_state: 'not_paid',
    date: addDays(today, -2),
    invoice_date: addDays(today, -2),
    invoice_date_due: addDays(today, 28),
    partner_id: customers[2]!,
    journal_id: 7,
    amount_untaxed: 7000,
    amount_tax: 0,
    amount_total: 7000,
    amount_residual: 7000,
    amount_untaxed_signed: 7000,
    amount_total_signed: 7000,
    amount_residual_signed: 7000,
  });
  t.account_move!.push(usOpening, usInvoice);
  const usLine = (move: Row, row: Parameters<typeof addLine>[1]) => {
    addLine(move, row);
    t.account_move_line![t.account_move_line!.length - 1]!.company_id = 2;
  };
  usLine(usOpening, { account: 12, debit: 40_000, credit: 0, name: 'Opening balance' });
  usLine(usOpening, { account: ACCOUNTS.equity, debit: 0, credit: 40_000, name: 'Opening balance' });
  usLine(usInvoice, {
    account: ACCOUNTS.receivable,
    debit: 7000,
    credit: 0,
    name: usInvoice.name as string,
    residual: 7000,
    maturity: usInvoice.invoice_date_due as string,
  });
  usLine(usInvoice, { account: ACCOUNTS.income, debit: 0, credit: 7000, name: 'Services' });
  return t;
}
