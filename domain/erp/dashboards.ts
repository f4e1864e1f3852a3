/**
 * The figures behind `GET /api/portal/odoo/:slug/{kpis,cashflow,alerts}` (and the data service's
 * `/data/workspaces/:workspaceId/…`), in this order:
 *
 * - their answers' JSON schemas, which are also their types;
 * - what they read from a workspace's tenant ERP (`TenantErpReads`): workspace slug → tenant
 *   (tenants.workspace_id) → route host + database (domain/tenants/http-routes.ts) → API user
 *   (tenant_erp_credentials, api-user.ts) → XML-RPC (JSON-2 with the API key on 19+, client.ts);
 *   the reads only fetch, and an ERP failure becomes the caller's problem (404/502/503/504) in
 *   `erpFailureAsProblem`;
 * - the figures, computed the way Odoo's accounting dashboard does from what was read: pure
 *   functions, no I/O;
 * - the service: a figure is read through one cache, in the process (`createDashboardService`):
 *   cached? → answer; else read the tenant ERP → compute → cache → answer.
 */
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { Type, type Static } from 'typebox';
import type { Config } from '../../lib/config.js';
import { AppError, type ErrorCode } from '../../lib/errors.js';
import type { ErpVersion } from '../tenants/types.js';
import { workspaceTenantWithRoute } from '../tenants/http-routes.js';
import { annotateActiveSpan } from '../../lib/tracing.js';
import { erpClientFor, loadErpApiCredentials } from './api-user.js';
import { ErpFault, ErpUnreachable, orNull, type ErpClient, type ErpUnreachableReason } from './client.js';

// ---- the answers ----

const Money = (description: string) => Type.Number({ description });
const Day = (description: string) => Type.String({ format: 'date', description });

const Common = {
  workspace: Type.String({ description: 'The workspace slug' }),
  currency: Type.String({
    description:
      'ISO 4217 code of the main company currency; every amount is in it (company-currency amounts, also for documents in other currencies)',
  }),
  asOf: Day('The day the figures were computed for (UTC)'),
  erpVersion: Type.Union([Type.Literal('17'), Type.Literal('18'), Type.Literal('19')], {
    description: 'ERP version of the tenant',
  }),
};

export const KpisSchema = Type.Object(
  {
    ...Common,
    period: Type.Object(
      { from: Day('First day of this month'), to: Day('Today') },
      { description: 'The period of the revenue figure' },
    ),
    revenue: Money('Revenue this month: untaxed total of posted customer invoices minus credit notes, by invoice date'),
    receivables: Money(
      'Amount due from customers: residual of posted, not fully paid customer invoices and credit notes',
    ),
    overdueReceivables: Money('The part of the receivables whose due date is before today'),
    overdueInvoiceCount: Type.Integer({
      description: 'Number of posted customer invoices that are overdue and not paid',
    }),
    payables: Money('Amount due to vendors: residual of posted, not fully paid vendor bills and refunds'),
    overduePayables: Money('The part of the payables whose due date is before today'),
    cashBalance: Money('Balance of the bank and cash journals (their default accounts, posted entries)'),
    cashJournals: Type.Array(
      Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        type: Type.String({ description: 'bank, cash or credit (card)' }),
        balance: Type.Number(),
      }),
      { description: 'The balance per bank, cash and credit-card journal of the main company' },
    ),
    companies: Type.Array(
      Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        currency: Type.String({ description: "ISO 4217 code of this company's currency; its amounts are in it" }),
        revenue: Type.Number(),
        receivables: Type.Number(),
        payables: Type.Number(),
        cashBalance: Type.Number(),
      }),
      {
        description:
          'The same figures per company of the ERP, each in its own currency (never added across currencies); the first is the main company',
      },
    ),
  },
  { description: "Key figures of the workspace's main company (in its currency), and per company" },
);

export const CashflowSchema = Type.Object(
  {
    ...Common,
    months: Type.Array(
      Type.Object({
        month: Type.String({ pattern: '^\\d{4}-\\d{2}$', description: 'YYYY-MM' }),
        inflow: Money('Money received on the bank and cash accounts (posted debits)'),
        outflow: Money('Money paid from the bank and cash accounts (posted credits)'),
        net: Money('inflow - outflow'),
      }),
      { description: 'Oldest month first; the last one is the current month so far' },
    ),
    totals: Type.Object({ inflow: Type.Number(), outflow: Type.Number(), net: Type.Number() }),
  },
  { description: 'Cash flow in and out per month' },
);

const Severity = Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('critical')]);
export const AlertsSchema = Type.Object(
  {
    ...Common,
    overdueInvoices: Type.Object({
      count: Type.Integer({ description: 'Posted customer invoices past their due date and not paid' }),
      total: Money('Their amount due'),
      oldest: Type.Array(
        Type.Object({
          id: Type.Integer(),
          number: Type.String(),
          customer: Type.Union([Type.String(), Type.Null()]),
          dueDate: Day('Due date'),
          daysOverdue: Type.Integer(),
          amountDue: Type.Number(),
        }),
        { description: 'The oldest overdue invoices (up to 5)' },
      ),
    }),
    unreconciledBankLines: Type.Object({
      count: Type.Integer({ description: 'Bank statement lines not reconciled yet' }),
      total: Money('Sum of their amounts (positive: money in)'),
      oldest: Type.Array(
        Type.Object({
          id: Type.Integer(),
          date: Day('Value date'),
          label: Type.Union([Type.String(), Type.Null()]),
          amount: Type.Number(),
          journal: Type.Union([Type.String(), Type.Null()]),
        }),
        { description: 'The oldest unreconciled lines (up to 5)' },
      ),
    }),
    alerts: Type.Array(Type.Object({ kind: Type.String(), severity: Severity, message: Type.String() }), {
      description: 'Human-readable summary',
    }),
  },
  { description: 'What needs attention in the workspace' },
);

export type Kpis = Static<typeof KpisSchema>;
export type Cashflow = Static<typeof CashflowSchema>;
export type Alerts = Static<typeof AlertsSchema>;

// ---- what is read from the tenant ERP ----

type Domain = unknown[];
export interface Group {
  /** Group value: a date group's first day (`YYYY-MM-DD`), a many2one's id, or the raw value. */
  key: string | number | null;
  /** The values of every groupby, in order (key is the first). */
  keys: (string | number | null)[];
  count: number;
  sums: Record<string, number>;
}
export interface Company {
  id: number;
  name: string;
  currency: string;
}
export interface LiquidityJournal {
  id: number;
  name: string;
  type: string;
  accountId: number | null;
  companyId: number | null;
}
export interface OverdueInvoice {
  id: number;
  name: string;
  partner_id: [number, string] | false;
  invoice_date_due: string;
  amount_residual_signed: number;
}
export interface BankLine {
  id: number;
  date: string;
  payment_ref: string | false;
  amount: number;
  journal_id: [number, string] | false;
}

const customerDocs = ['move_type', 'in', ['out_invoice', 'out_refund']];
const vendorDocs = ['move_type', 'in', ['in_invoice', 'in_refund']];
// still due: not paid, partially paid, or (18+) blocked; amounts are the company-currency `_signed` ones
const open = [
  ['state', '=', 'posted'],
  ['payment_state', 'in', ['not_paid', 'partial', 'blocked']],
];

const unreachableCodes: Record<ErpUnreachableReason, ErrorCode> = {
  'no-route': 'NOT_FOUND',
  down: 'UNAVAILABLE',
  timeout: 'GATEWAY_TIMEOUT',
  'bad-answer': 'BAD_GATEWAY',
};

/**
 * What an ERP failure means to the dashboard's caller: a fault is a 502 without the ERP's
 * internals; an ERP that cannot be asked is 404 (no route: not provisioned), 503 (down) or 504
 * (too slow), with the ERP's own words. Anything else is passed on as it is.
 */
export function erpFailureAsProblem(err: unknown): unknown {
  if (err instanceof ErpFault) {
    const reason =
      err.code === 3 ? 'rejected the API user' : err.code === 4 ? 'denied the API user access' : 'refused the request';
    return new AppError('BAD_GATEWAY', `The tenant ERP ${reason} (fault ${err.code})`);
  }
  if (err instanceof ErpUnreachable) return new AppError(unreachableCodes[err.reason], err.message);
  return err;
}

function groupKey(value: unknown): string | number | null {
  if (value === false || value === undefined || value === null) return null;
  if (Array.isArray(value)) return value[0] as string | number; // many2one [id, name] or date [from, label]
  return value as string | number;
}

/** One workspace's tenant ERP, as its read-only API user sees it. */
export class TenantErpReads {
  constructor(
    private readonly client: ErpClient,
    readonly version: ErpVersion,
  ) {}

  /** The tenant ERP of a workspace (NOT_FOUND when it has none, no route or no API user yet). */
  static async of(deps: { pool: pg.Pool; config: Config }, slug: string): Promise<TenantErpReads> {
    const found = await workspaceTenantWithRoute(deps.pool, slug);
    if (!found) throw new AppError('NOT_FOUND', `Workspace ${slug} has no tenant ERP`);
    const row = found.route;
    if (!row) throw new AppError('NOT_FOUND', `The tenant ERP of workspace ${slug} is not provisioned yet (no route)`);
    annotateActiveSpan({ 'plana.tenant': row.tenant });
    const credentials = await loadErpApiCredentials(deps.pool, deps.config.SECRETS_KEY, row.tenant);
    if (!credentials) throw new AppError('NOT_FOUND', `The tenant ERP of workspace ${slug} has no API user yet`);
    const version = found.erpVersion;
    return new TenantErpReads(
      erpClientFor({ baseUrl: deps.config.ERP_URL, host: row.host, db: row.database, version }, credentials),
      version,
    );
  }

  /**
   * Sums per group. Where ERP versions differ for the dashboards, in one place: 17 and 18 aggregate
   * with `read_group` (values keyed by field name, date groups as labels with a `__range`); 19
   * deprecates it in favour of `formatted_read_group` (values keyed by the aggregate spec, date
   * groups as `[first day, label]`).
   */
  async sumBy(model: string, domain: Domain, groupby: string[], fields: string[]): Promise<Group[]> {
    const specs = fields.map((f) => `${f}:sum`);
    if (this.version === '19') {
      const rows = await this.client.executeKw<Record<string, unknown>[]>(model, 'formatted_read_group', [
        domain,
        groupby,
        [...specs, '__count'],
      ]);
      return rows.map((row) => ({
        key: groupKey(row[groupby[0] ?? '']),
        keys: groupby.map((g) => groupKey(row[g])),
        count: Number(row.__count ?? 0),
        sums: Object.fromEntries(fields.map((f, i) => [f, Number(orNull(row[specs[i]!] as number | false) ?? 0)])),
      }));
    }
    const rows = await this.client.executeKw<Record<string, unknown>[]>(model, 'read_group', [domain, specs, groupby], {
      lazy: false,
    });
    return rows.map((row) => {
      const spec = groupby[0];
      const range = spec ? (row.__range as Record<string, { from: string } | false> | undefined)?.[spec] : undefined;
      return {
        key: range ? range.from : groupKey(spec ? row[spec] : undefined),
        keys: groupby.map((g) => groupKey(row[g])),
        count: Number(row.__count ?? 0),
        sums: Object.fromEntries(fields.map((f) => [f, Number(orNull(row[f] as number | false) ?? 0)])),
      };
    });
  }

  /**
   * The companies the API user sees, oldest first: the first is the main one, the company Odoo made
   * at its install (Odoo's own order is by sequence and name, where any other may come first).
   */
  async companies(): Promise<Company[]> {
    const companies = await this.client.executeKw<
      { id: number; name: string; currency_id: [number, string] | false }[]
    >('res.company', 'search_read', [[]], {
      fields: ['name', 'currency_id'],
      order: 'id',
    });
    if (!companies.length)
      throw new AppError(
        'BAD_GATEWAY',
        'The tenant ERP shows the API user no company (is it linked to the companies?)',
      );
    return companies.map((c) => ({ id: c.id, name: c.name, currency: c.currency_id ? c.currency_id[1] : 'EUR' }));
  }

  /** Bank, cash and (18+) credit-card journals: their default accounts hold the money. */
  async liquidityJournals(): Promise<LiquidityJournal[]> {
    const journals = await this.client.executeKw<
      {
        id: number;
        name: string;
        type: string;
        default_account_id: [number, string] | false;
        company_id: [number, string] | false;
      }[]
    >('account.journal', 'search_read', [[['type', 'in', ['bank', 'cash', 'credit']]]], {
      fields: ['name', 'type', 'default_account_id', 'company_id'],
      order: 'sequence, id',
    });
    return journals.map((j) => ({
      id: j.id,
      name: j.name,
      type: j.type,
      accountId: j.default_account_id ? j.default_account_id[0] : null,
      companyId: j.company_id ? j.company_id[0] : null,
    }));
  }

  /** Everything the KPIs are computed from, per company (today: `YYYY-MM-DD`, UTC). */
  async kpiInputs(today: string) {
    const monthStart = `${today.slice(0, 8)}01`;
    const overdue = ['invoice_date_due', '<', today];
    const byCompany = ['company_id'];
    const [companies, revenue, receivables, overdueReceivables, payables, overduePayables, journals] =
      await Promise.all([
        this.companies(),
        this.sumBy(
          'account.move',
          [customerDocs, ['state', '=', 'posted'], ['invoice_date', '>=', monthStart], ['invoice_date', '<=', today]],
          byCompany,
          ['amount_untaxed_signed'],
        ),
        this.sumBy('account.move', [customerDocs, ...open], byCompany, ['amount_residual_signed']),
        this.sumBy('account.move', [['move_type', '=', 'out_invoice'], ...open, overdue], byCompany, [
          'amount_residual_signed',
        ]),
        this.sumBy('account.move', [vendorDocs, ...open], byCompany, ['amount_residual_signed']),
        this.sumBy('account.move', [['move_type', '=', 'in_invoice'], ...open, overdue], byCompany, [
          'amount_residual_signed',
        ]),
        this.liquidityJournals(),
      ]);
    const accountIds = [...new Set(journals.map((j) => j.accountId).filter((id): id is number => id !== null))];
    // per company and account: on 18+ an account can be shared by several companies
    const balances = await this.sumBy(
      'account.move.line',
      [
        ['account_id', 'in', accountIds],
        ['parent_state', '=', 'posted'],
      ],
      ['company_id', 'account_id'],
      ['balance'],
    );
    return {
      monthStart,
      companies,
      revenue,
      receivables,
      overdueReceivables,
      payables,
      overduePayables,
      journals,
      balances,
    };
  }

  /** The main company's money in and out per month, from `from` to `today`, in its currency. */
  async cashflowInputs(from: string, today: string) {
    const [companies, journals] = await Promise.all([this.companies(), this.liquidityJournals()]);
    const main = companies[0]!;
    const accountIds = [
      ...new Set(
        journals
          .filter((j) => j.companyId === main.id)
          .map((j) => j.accountId)
          .filter((id): id is number => id !== null),
      ),
    ];
    const months = await this.sumBy(
      'account.move.line',
      [
        ['account_id', 'in', accountIds],
        ['company_id', '=', main.id],
        ['parent_state', '=', 'posted'],
        ['date', '>=', from],
        ['date', '<=', today],
      ],
      ['date:month'],
      ['debit', 'credit'],
    );
    return { main, months };
  }

  /** The main company's overdue invoices and unreconciled bank lines (totals and the 5 oldest). */
  async alertInputs(today: string) {
    const main = (await this.companies())[0]!;
    // the main company's, in its currency: amount_residual is in each invoice's own currency, never added up
    const overdueDomain = [
      ['move_type', '=', 'out_invoice'],
      ['company_id', '=', main.id],
      ...open,
      ['invoice_date_due', '<', today],
    ];
    const unreconciledDomain = [
      ['is_reconciled', '=', false],
      ['company_id', '=', main.id],
    ];
    const [overdueTotals, oldestInvoices, bankTotals, oldestLines] = await Promise.all([
      this.sumBy('account.move', overdueDomain, [], ['amount_residual_signed']),
      this.client.executeKw<OverdueInvoice[]>('account.move', 'search_read', [overdueDomain], {
        fields: ['name', 'partner_id', 'invoice_date_due', 'amount_residual_signed'],
        order: 'invoice_date_due asc, id asc',
        limit: 5,
      }),
      this.sumBy('account.bank.statement.line', unreconciledDomain, [], ['amount']),
      this.client.executeKw<BankLine[]>('account.bank.statement.line', 'search_read', [unreconciledDomain], {
        fields: ['date', 'payment_ref', 'amount', 'journal_id'],
        order: 'date asc, id asc',
        limit: 5,
      }),
    ]);
    return { main, overdueTotals, oldestInvoices, bankTotals, oldestLines };
  }
}

export type KpiInputs = Awaited<ReturnType<TenantErpReads['kpiInputs']>>;
export type CashflowInputs = Awaited<ReturnType<TenantErpReads['cashflowInputs']>>;
export type AlertInputs = Awaited<ReturnType<TenantErpReads['alertInputs']>>;

// ---- the figures ----

/** What every figure says of itself: whose, in which currency, as of which day, from which ERP. */
export interface FigureOf {
  workspace: string;
  today: string;
  erpVersion: ErpVersion;
}

const round2 = (n: number) => Math.round(n * 100) / 100;
export const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const total = (groups: Group[], field: string) => round2(groups.reduce((s, g) => s + (g.sums[field] ?? 0), 0));
const ofCompany = (groups: Group[], companyId: number, field: string) =>
  total(
    groups.filter((g) => g.key === companyId),
    field,
  );
const daysBetween = (a: string, b: string) => Math.round((Date.parse(b) - Date.parse(a)) / 86_400_000);

/** Revenue this month, receivables, payables and cash, for the main company and per company. */
export function kpisFigure(of: FigureOf, r: KpiInputs): Kpis {
  const main = r.companies[0]!;
  const balanceOf = (companyId: number | null, accountId: number | null) =>
    total(
      r.balances.filter((b) => b.keys[0] === companyId && b.keys[1] === accountId),
      'balance',
    );
  const journalBalances = r.journals.map((j) => ({
    id: j.id,
    name: j.name,
    type: j.type,
    companyId: j.companyId,
    balance: balanceOf(j.companyId, j.accountId),
  }));
  const cashOf = (companyId: number) =>
    round2(journalBalances.filter((j) => j.companyId === companyId).reduce((s, j) => s + j.balance, 0));
  const figures = r.companies.map((c) => ({
    id: c.id,
    name: c.name,
    currency: c.currency,
    revenue: ofCompany(r.revenue, c.id, 'amount_untaxed_signed'),
    receivables: ofCompany(r.receivables, c.id, 'amount_residual_signed'),
    payables: round2(-ofCompany(r.payables, c.id, 'amount_residual_signed')),
    cashBalance: cashOf(c.id),
  }));
  return {
    workspace: of.workspace,
    currency: main.currency,
    asOf: of.today,
    erpVersion: of.erpVersion,
    period: { from: r.monthStart, to: of.today },
    revenue: figures[0]!.revenue,
    receivables: figures[0]!.receivables,
    overdueReceivables: ofCompany(r.overdueReceivables, main.id, 'amount_residual_signed'),
    overdueInvoiceCount: r.overdueReceivables.filter((g) => g.key === main.id).reduce((n, g) => n + g.count, 0),
    payables: figures[0]!.payables,
    overduePayables: round2(-ofCompany(r.overduePayables, main.id, 'amount_residual_signed')),
    cashBalance: figures[0]!.cashBalance,
    cashJournals: journalBalances
      .filter((j) => j.companyId === main.id)
      .map(({ id, name, type, balance }) => ({ id, name, type, balance })),
    companies: figures,
  };
}

/** The first day of the oldest of the last `months` months (the current one included). */
export function cashflowStart(today: string, months: number): Date {
  const first = new Date(`${today.slice(0, 8)}01T00:00:00Z`);
  first.setUTCMonth(first.getUTCMonth() - (months - 1));
  return first;
}

/** Money in and out per month, oldest first, every month present (zero when nothing moved). */
export function cashflowFigure(of: FigureOf, first: Date, months: number, r: CashflowInputs): Cashflow {
  const series = Array.from({ length: months }, (_, i) => {
    const d = new Date(first);
    d.setUTCMonth(first.getUTCMonth() + i);
    const month = isoDay(d).slice(0, 7);
    const group = r.months.find((g) => String(g.key).slice(0, 7) === month);
    const inflow = round2(group?.sums.debit ?? 0);
    const outflow = round2(group?.sums.credit ?? 0);
    return { month, inflow, outflow, net: round2(inflow - outflow) };
  });
  const sum = (k: 'inflow' | 'outflow' | 'net') => round2(series.reduce((s, m) => s + m[k], 0));
  return {
    workspace: of.workspace,
    currency: r.main.currency,
    asOf: of.today,
    erpVersion: of.erpVersion,
    months: series,
    totals: { inflow: sum('inflow'), outflow: sum('outflow'), net: sum('net') },
  };
}

/** Overdue invoices and unreconciled bank lines, with a human-readable summary. */
export function alertsFigure(of: FigureOf, r: AlertInputs): Alerts {
  const { today } = of;
  const currency = r.main.currency;
  const overdueCount = r.overdueTotals.reduce((n, g) => n + g.count, 0);
  const overdueTotal = total(r.overdueTotals, 'amount_residual_signed');
  const lineCount = r.bankTotals.reduce((n, g) => n + g.count, 0);
  const lineTotal = total(r.bankTotals, 'amount');
  const alerts: Alerts['alerts'] = [];
  if (overdueCount) {
    const worst = daysBetween(r.oldestInvoices[0]!.invoice_date_due, today);
    alerts.push({
      kind: 'overdue_invoices',
      severity: worst > 60 ? 'critical' : 'warning',
      message: `${overdueCount} customer invoice${overdueCount === 1 ? ' is' : 's are'} overdue (${overdueTotal.toFixed(2)} ${currency}); the oldest by ${worst} days`,
    });
  }
  if (lineCount) {
    alerts.push({
      kind: 'unreconciled_bank_lines',
      severity: daysBetween(r.oldestLines[0]!.date, today) > 30 ? 'warning' : 'info',
      message: `${lineCount} bank statement line${lineCount === 1 ? ' is' : 's are'} not reconciled`,
    });
  }
  return {
    workspace: of.workspace,
    currency,
    asOf: today,
    erpVersion: of.erpVersion,
    overdueInvoices: {
      count: overdueCount,
      total: overdueTotal,
      oldest: r.oldestInvoices.map((m) => ({
        id: m.id,
        number: m.name,
        customer: m.partner_id ? m.partner_id[1] : null,
        dueDate: m.invoice_date_due,
        daysOverdue: daysBetween(m.invoice_date_due, today),
        amountDue: round2(m.amount_residual_signed),
      })),
    },
    unreconciledBankLines: {
      count: lineCount,
      total: lineTotal,
      oldest: r.oldestLines.map((l) => ({
        id: l.id,
        date: l.date,
        label: orNull(l.payment_ref),
        amount: round2(l.amount),
        journal: l.journal_id ? l.journal_id[1] : null,
      })),
    },
    alerts,
  };
}

// ---- the service and its cache ----

export type FigureName = 'kpis' | 'cashflow' | 'alerts';

export interface DashboardService {
  kpis(workspaceSlug: string): Promise<Kpis>;
  cashflow(workspaceSlug: string, opts?: { months?: number }): Promise<Cashflow>;
  alerts(workspaceSlug: string): Promise<Alerts>;
}

/** The service with its figures also as the JSON bytes the API sends. */
export interface DashboardAnswers extends DashboardService {
  json(workspaceSlug: string, figure: FigureName, opts?: { months?: number }): Promise<Buffer>;
}

/** Answers from a service made elsewhere (the tests' stand-ins): its figures as they come, uncached. */
export function answersOf(service: DashboardService): DashboardAnswers {
  return {
    ...service,
    json: async (slug, figure, opts) =>
      Buffer.from(JSON.stringify(await (figure === 'cashflow' ? service.cashflow(slug, opts) : service[figure](slug)))),
  };
}

export const DASHBOARD_CACHE_SECONDS = 30;

/**
 * The dashboards' service with its one cache: each figure of each workspace as the JSON bytes
 * sent, kept in this process for `cacheTtlMs` (DASHBOARD_CACHE_SECONDS by default) by lru-cache,
 * whose `fetch` lets concurrent misses share one ERP read. Failures are not kept.
 */
export function createDashboardService(deps: { pool: pg.Pool; config: Config; cacheTtlMs?: number }): DashboardAnswers {
  const cache = new LRUCache<string, Buffer, () => Promise<unknown>>({
    max: 10_000,
    ttl: deps.cacheTtlMs ?? DASHBOARD_CACHE_SECONDS * 1000,
    fetchMethod: async (_key, _stale, { context: compute }) => Buffer.from(JSON.stringify(await compute())),
  });

  /** Reads the workspace's ERP and computes the figure; an ERP failure becomes the caller's problem. */
  async function compute(workspace: string, figure: FigureName, months: number): Promise<Kpis | Cashflow | Alerts> {
    try {
      const erp = await TenantErpReads.of(deps, workspace);
      const today = isoDay(new Date());
      const of: FigureOf = { workspace, today, erpVersion: erp.version };
      if (figure === 'kpis') return kpisFigure(of, await erp.kpiInputs(today));
      if (figure === 'alerts') return alertsFigure(of, await erp.alertInputs(today));
      const first = cashflowStart(today, months);
      return cashflowFigure(of, first, months, await erp.cashflowInputs(isoDay(first), today));
    } catch (err) {
      throw erpFailureAsProblem(err);
    }
  }

  /** The cached JSON of a figure (cash flow: 1 to 24 months, 6 by default). */
  function json(slug: string, figure: FigureName, opts: { months?: number } = {}): Promise<Buffer> {
    const months = Math.min(Math.max(Math.trunc(opts.months ?? 6), 1), 24);
    const key = figure === 'cashflow' ? `${slug}:cashflow:${months}` : `${slug}:${figure}`;
    // a warm figure is answered from the cache without a fetch (its promises and this call's closure)
    const hit = cache.get(key);
    if (hit) return Promise.resolve(hit);
    return cache.fetch(key, { context: () => compute(slug, figure, months) }) as Promise<Buffer>;
  }
  const parsed = async <T>(slug: string, figure: FigureName, opts?: { months?: number }): Promise<T> =>
    JSON.parse((await json(slug, figure, opts)).toString('utf8')) as T;

  return {
    kpis: (slug) => parsed<Kpis>(slug, 'kpis'),
    cashflow: (slug, opts) => parsed<Cashflow>(slug, 'cashflow', opts),
    alerts: (slug) => parsed<Alerts>(slug, 'alerts'),
    json,
  };
}
