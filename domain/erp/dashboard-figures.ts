/**
 * The dashboards' three figures, computed the way Odoo's accounting dashboard does from what
 * dashboard-reads.ts fetched: pure functions, no I/O.
 */
import { orNull } from './client.js';
import type { AlertInputs, CashflowInputs, Group, KpiInputs } from './dashboard-reads.js';
import type { Alerts, Cashflow, Kpis } from './dashboard-schemas.js';
import type { ErpVersion } from '../tenants/types.js';

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
