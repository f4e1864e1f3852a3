/**
 * The figures behind `GET /api/portal/odoo/:slug/{kpis,cashflow,alerts}` (and the data service's
 * `/data/workspaces/:workspaceId/…`), in this order:
 *
 * - their answers' JSON schemas, which are also their types;
 * - the figures, computed the way Odoo's accounting dashboard does from what dashboard-reads.ts
 *   fetched (tenant, route, API user, XML-RPC / JSON-2): pure functions, no I/O;
 * - the service: a figure is read through one cache, `DashboardCache` (Redis):
 *   cached? → answer; else read the tenant ERP → compute → cache → answer.
 *
 * An ERP failure becomes the caller's problem (404/502/503/504) in `erpFailureAsProblem`.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { Type, type Static } from 'typebox';
import type { Config } from '../../lib/config.js';
import type { ErpVersion } from '../tenants/types.js';
import { orNull } from './client.js';
import {
  TenantErpReads,
  erpFailureAsProblem,
  type AlertInputs,
  type CashflowInputs,
  type Group,
  type KpiInputs,
} from './dashboard-reads.js';

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
 * The dashboards' one cache: each figure of each workspace as JSON, in Redis for
 * DASHBOARD_CACHE_SECONDS, shared by every replica (key `erp:dashboard:<slug>:<figure>`).
 * Concurrent misses in one process share one computation, so a burst reads the ERP once.
 * Failures are not kept.
 */
class DashboardCache {
  private readonly computing = new Map<string, Promise<Buffer>>();

  constructor(private readonly redis: Redis) {}

  async get(key: string, compute: () => Promise<unknown>): Promise<Buffer> {
    const hit = await this.redis.getBuffer(key);
    if (hit && hit.length > 0) return hit;
    let computing = this.computing.get(key);
    if (!computing) {
      computing = this.computeAndStore(key, compute).finally(() => this.computing.delete(key));
      this.computing.set(key, computing);
    }
    return computing;
  }

  private async computeAndStore(key: string, compute: () => Promise<unknown>): Promise<Buffer> {
    const json = Buffer.from(JSON.stringify(await compute()));
    await this.redis.set(key, json, 'EX', DASHBOARD_CACHE_SECONDS);
    return json;
  }
}

export function createDashboardService(deps: { pool: pg.Pool; redis: Redis; config: Config }): DashboardAnswers {
  const cache = new DashboardCache(deps.redis);

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
    const key = figure === 'cashflow' ? `erp:dashboard:${slug}:cashflow:${months}` : `erp:dashboard:${slug}:${figure}`;
    return cache.get(key, () => compute(slug, figure, months));
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
