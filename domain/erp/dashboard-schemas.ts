/**
 * The answers of the dashboards (`GET /api/portal/odoo/:slug/{kpis,cashflow,alerts}` and the data
 * service's `/data/workspaces/:workspaceId/…`): their JSON schemas, which are also their types.
 */
import { Type, type Static } from 'typebox';

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
