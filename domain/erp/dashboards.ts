/**
 * The figures behind `GET /api/portal/odoo/:slug/{kpis,cashflow,alerts}`, read from the
 * workspace's tenant ERP over XML-RPC as the tenant's dedicated API user (never a human's
 * credentials), computed the way Odoo's accounting dashboard does, and cached briefly in Redis.
 *
 * workspace slug → tenant (tenants.workspace_id) → route host + database (tenant_routes)
 * → API user (tenant_erp_credentials) → XML-RPC.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { Type, type Static } from 'typebox';
import type { Config } from '../../lib/config.js';
import { AppError, type ErrorCode } from '../../lib/errors.js';
import { erpClientFor, loadErpApiCredentials } from './api-user.js';
import { ErpFault, ErpUnreachable, orNull, type ErpClient, type ErpUnreachableReason } from './client.js';
import { erpVersionOfNamespace, type ErpVersion } from '../tenants/types.js';
import { workspaceTenantWithRoute } from '../tenants/http-routes.js';

const unreachableCodes: Record<ErpUnreachableReason, ErrorCode> = {
  'no-route': 'NOT_FOUND',
  down: 'UNAVAILABLE',
  timeout: 'GATEWAY_TIMEOUT',
  'bad-answer': 'BAD_GATEWAY',
};

const Money = (description: string) => Type.Number({ description });
const Day = (description: string) => Type.String({ format: 'date', description });

const Common = {
  workspace: Type.String({ description: 'The workspace slug' }),
  currency: Type.String({ description: 'ISO 4217 code of the main company currency; every amount is in it (company-currency amounts, also for documents in other currencies)' }),
  asOf: Day('The day the figures were computed for (UTC)'),
  erpVersion: Type.Union([Type.Literal('17'), Type.Literal('18'), Type.Literal('19')], { description: 'ERP version of the tenant' }),
};

export const KpisSchema = Type.Object(
  {
    ...Common,
    period: Type.Object({ from: Day('First day of this month'), to: Day('Today') }, { description: 'The period of the revenue figure' }),
    revenue: Money('Revenue this month: untaxed total of posted customer invoices minus credit notes, by invoice date'),
    receivables: Money('Amount due from customers: residual of posted, not fully paid customer invoices and credit notes'),
    overdueReceivables: Money('The part of the receivables whose due date is before today'),
    overdueInvoiceCount: Type.Integer({ description: 'Number of posted customer invoices that are overdue and not paid' }),
    payables: Money('Amount due to vendors: residual of posted, not fully paid vendor bills and refunds'),
    overduePayables: Money('The part of the payables whose due date is before today'),
    cashBalance: Money('Balance of the bank and cash journals (their default accounts, posted entries)'),
    cashJournals: Type.Array(
      Type.Object({ id: Type.Integer(), name: Type.String(), type: Type.String({ description: 'bank, cash or credit (card)' }), balance: Type.Number() }),
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
      { description: 'The same figures per company of the ERP, each in its own currency (never added across currencies); the first is the main company' },
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
    alerts: Type.Array(Type.Object({ kind: Type.String(), severity: Severity, message: Type.String() }), { description: 'Human-readable summary' }),
  },
  { description: 'What needs attention in the workspace' },
);

export type Kpis = Static<typeof KpisSchema>;
export type Cashflow = Static<typeof CashflowSchema>;
export type Alerts = Static<typeof AlertsSchema>;

export interface DashboardService {
  kpis(workspaceSlug: string): Promise<Kpis>;
  cashflow(workspaceSlug: string, opts?: { months?: number }): Promise<Cashflow>;
  alerts(workspaceSlug: string): Promise<Alerts>;
}

export const DASHBOARD_CACHE_SECONDS = 30;
const round2 = (n: number) => Math.round(n * 100) / 100;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);

interface Tenant {
  tenant: string;
  host: string;
  database: string;
  version: ErpVersion;
}

type Domain = unknown[];
interface Group {
  /** Group value: a date group's first day (`YYYY-MM-DD`), a many2one's id, or the raw value. */
  key: string | number | null;
  /** The values of every groupby, in order (key is the first). */
  keys: (string | number | null)[];
  count: number;
  sums: Record<string, number>;
}

/**
 * Where ERP versions differ for the dashboards, in one place: 17 and 18 aggregate with
 * `read_group` (values keyed by field name, date groups as labels with a `__range`); 19
 * deprecates it in favour of `formatted_read_group` (values keyed by the aggregate spec, date
 * groups as `[first day, label]`).
 */
async function sumBy(client: ErpClient, version: ErpVersion, model: string, domain: Domain, groupby: string[], fields: string[]): Promise<Group[]> {
  const specs = fields.map((f) => `${f}:sum`);
  if (version === '19') {
    const rows = await client.executeKw<Record<string, unknown>[]>(model, 'formatted_read_group', [domain, groupby, [...specs, '__count']]);
    return rows.map((row) => ({
      key: groupKey(row[groupby[0] ?? '']),
      keys: groupby.map((g) => groupKey(row[g])),
      count: Number(row.__count ?? 0),
      sums: Object.fromEntries(fields.map((f, i) => [f, Number(orNull(row[specs[i]!] as number | false) ?? 0)])),
    }));
  }
  const rows = await client.executeKw<Record<string, unknown>[]>(model, 'read_group', [domain, specs, groupby], { lazy: false });
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

function groupKey(value: unknown): string | number | null {
  if (value === false || value === undefined || value === null) return null;
  if (Array.isArray(value)) return value[0] as string | number; // many2one [id, name] or date [from, label]
  return value as string | number;
}

const total = (groups: Group[], field: string) => round2(groups.reduce((s, g) => s + (g.sums[field] ?? 0), 0));

export function createDashboardService(deps: { pool: pg.Pool; redis: Redis; config: Config }): DashboardService {
  const clients = new Map<string, ErpClient>();

  async function resolve(slug: string): Promise<{ tenant: Tenant; client: ErpClient }> {
    const found = await workspaceTenantWithRoute(deps.pool, slug);
    if (!found) throw new AppError('NOT_FOUND', `Workspace ${slug} has no tenant ERP`);
    const row = found.route;
    if (!row) throw new AppError('NOT_FOUND', `The tenant ERP of workspace ${slug} is not provisioned yet (no route)`);
    const credentials = await loadErpApiCredentials(deps.pool, deps.config.SECRETS_KEY, row.tenant);
    if (!credentials) throw new AppError('NOT_FOUND', `The tenant ERP of workspace ${slug} has no API user yet`);
    const version = erpVersionOfNamespace(row.namespace);
    const tenant = { tenant: row.tenant, host: row.host, database: row.database, version };
    const key = createHash('sha256').update([row.host, row.database, version, credentials.login, credentials.password, credentials.apiKey ?? ''].join('\0')).digest('base64');
    let client = clients.get(key);
    if (!client) {
      // JSON-2 with the API key on 19+, XML-RPC with the password before
      client = erpClientFor({ baseUrl: deps.config.ERP_URL, host: row.host, db: row.database, version }, credentials);
      clients.set(key, client);
    }
    return { tenant, client };
  }

  /**
   * Cached per workspace and figure. What an ERP failure means to the dashboard's caller is said
   * here: a fault is a 502 without the ERP's internals; an ERP that cannot be asked is 404 (no
   * route: not provisioned), 503 (down) or 504 (too slow), with the ERP's own words.
   */
  async function cached<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const hit = await deps.redis.get(key);
    if (hit) return JSON.parse(hit) as T;
    let value: T;
    try {
      value = await compute();
    } catch (err) {
      if (err instanceof ErpFault) {
        const reason = err.code === 3 ? 'rejected the API user' : err.code === 4 ? 'denied the API user access' : 'refused the request';
        throw new AppError('BAD_GATEWAY', `The tenant ERP ${reason} (fault ${err.code})`);
      }
      if (err instanceof ErpUnreachable) throw new AppError(unreachableCodes[err.reason], err.message);
      throw err;
    }
    await deps.redis.set(key, JSON.stringify(value), 'EX', DASHBOARD_CACHE_SECONDS);
    return value;
  }

  /** The companies the API user sees, in Odoo's order: the first is the main one. */
  async function companiesOf(client: ErpClient): Promise<{ id: number; name: string; currency: string }[]> {
    const companies = await client.executeKw<{ id: number; name: string; currency_id: [number, string] | false }[]>('res.company', 'search_read', [[]], { fields: ['name', 'currency_id'] });
    if (!companies.length) throw new AppError('BAD_GATEWAY', 'The tenant ERP shows the API user no company (is it linked to the companies?)');
    return companies.map((c) => ({ id: c.id, name: c.name, currency: c.currency_id ? c.currency_id[1] : 'EUR' }));
  }

  /** Bank, cash and (18+) credit-card journals: their default accounts hold the money. */
  async function liquidityJournals(client: ErpClient) {
    const journals = await client.executeKw<{ id: number; name: string; type: string; default_account_id: [number, string] | false; company_id: [number, string] | false }[]>(
      'account.journal',
      'search_read',
      [[['type', 'in', ['bank', 'cash', 'credit']]]],
      { fields: ['name', 'type', 'default_account_id', 'company_id'], order: 'sequence, id' },
    );
    return journals.map((j) => ({ id: j.id, name: j.name, type: j.type, accountId: j.default_account_id ? j.default_account_id[0] : null, companyId: j.company_id ? j.company_id[0] : null }));
  }

  const customerDocs = ['move_type', 'in', ['out_invoice', 'out_refund']];
  const vendorDocs = ['move_type', 'in', ['in_invoice', 'in_refund']];
  // still due: not paid, partially paid, or (18+) blocked; amounts are the company-currency `_signed` ones
  const open = [['state', '=', 'posted'], ['payment_state', 'in', ['not_paid', 'partial', 'blocked']]];
  const ofCompany = (groups: Group[], companyId: number, field: string) => round2(groups.filter((g) => g.key === companyId).reduce((s, g) => s + (g.sums[field] ?? 0), 0));

  return {
    kpis(slug) {
      return cached(`erp:dashboard:${slug}:kpis`, async () => {
        const { tenant, client } = await resolve(slug);
        const today = isoDay(new Date());
        const monthStart = `${today.slice(0, 8)}01`;
        const overdue = ['invoice_date_due', '<', today];
        const byCompany = ['company_id'];
        const [companies, revenue, receivables, overdueReceivables, payables, overduePayables, journals] = await Promise.all([
          companiesOf(client),
          sumBy(client, tenant.version, 'account.move', [customerDocs, ['state', '=', 'posted'], ['invoice_date', '>=', monthStart], ['invoice_date', '<=', today]], byCompany, ['amount_untaxed_signed']),
          sumBy(client, tenant.version, 'account.move', [customerDocs, ...open], byCompany, ['amount_residual_signed']),
          sumBy(client, tenant.version, 'account.move', [['move_type', '=', 'out_invoice'], ...open, overdue], byCompany, ['amount_residual_signed']),
          sumBy(client, tenant.version, 'account.move', [vendorDocs, ...open], byCompany, ['amount_residual_signed']),
          sumBy(client, tenant.version, 'account.move', [['move_type', '=', 'in_invoice'], ...open, overdue], byCompany, ['amount_residual_signed']),
          liquidityJournals(client),
        ]);
        const main = companies[0]!;
        const accountIds = [...new Set(journals.map((j) => j.accountId).filter((id): id is number => id !== null))];
        // per company and account: on 18+ an account can be shared by several companies
        const balances = await sumBy(client, tenant.version, 'account.move.line', [['account_id', 'in', accountIds], ['parent_state', '=', 'posted']], ['company_id', 'account_id'], ['balance']);
        const balanceOf = (companyId: number | null, accountId: number | null) =>
          round2(balances.filter((b) => b.keys[0] === companyId && b.keys[1] === accountId).reduce((s, b) => s + (b.sums.balance ?? 0), 0));
        const journalBalances = journals.map((j) => ({ id: j.id, name: j.name, type: j.type, companyId: j.companyId, balance: balanceOf(j.companyId, j.accountId) }));
        const cashOf = (companyId: number) => round2(journalBalances.filter((j) => j.companyId === companyId).reduce((s, j) => s + j.balance, 0));
        const figures = companies.map((c) => ({
          id: c.id,
          name: c.name,
          currency: c.currency,
          revenue: ofCompany(revenue, c.id, 'amount_untaxed_signed'),
          receivables: ofCompany(receivables, c.id, 'amount_residual_signed'),
          payables: round2(-ofCompany(payables, c.id, 'amount_residual_signed')),
          cashBalance: cashOf(c.id),
        }));
        return {
          workspace: slug,
          currency: main.currency,
          asOf: today,
          erpVersion: tenant.version,
          period: { from: monthStart, to: today },
          revenue: figures[0]!.revenue,
          receivables: figures[0]!.receivables,
          overdueReceivables: ofCompany(overdueReceivables, main.id, 'amount_residual_signed'),
          overdueInvoiceCount: overdueReceivables.filter((g) => g.key === main.id).reduce((n, g) => n + g.count, 0),
          payables: figures[0]!.payables,
          overduePayables: round2(-ofCompany(overduePayables, main.id, 'amount_residual_signed')),
          cashBalance: figures[0]!.cashBalance,
          cashJournals: journalBalances.filter((j) => j.companyId === main.id).map(({ id, name, type, balance }) => ({ id, name, type, balance })),
          companies: figures,
        } satisfies Kpis;
      });
    },

    cashflow(slug, opts = {}) {
      const months = Math.min(Math.max(Math.trunc(opts.months ?? 6), 1), 24);
      return cached(`erp:dashboard:${slug}:cashflow:${months}`, async () => {
        const { tenant, client } = await resolve(slug);
        const today = isoDay(new Date());
        const first = new Date(`${today.slice(0, 8)}01T00:00:00Z`);
        first.setUTCMonth(first.getUTCMonth() - (months - 1));
        const from = isoDay(first);
        const [companies, journals] = await Promise.all([companiesOf(client), liquidityJournals(client)]);
        const main = companies[0]!;
        const currency = main.currency;
        const accountIds = [...new Set(journals.filter((j) => j.companyId === main.id).map((j) => j.accountId).filter((id): id is number => id !== null))];
        // the main company's money, in its currency
        const groups = await sumBy(
          client,
          tenant.version,
          'account.move.line',
          [['account_id', 'in', accountIds], ['company_id', '=', main.id], ['parent_state', '=', 'posted'], ['date', '>=', from], ['date', '<=', today]],
          ['date:month'],
          ['debit', 'credit'],
        );
        const series = Array.from({ length: months }, (_, i) => {
          const d = new Date(first);
          d.setUTCMonth(first.getUTCMonth() + i);
          const month = isoDay(d).slice(0, 7);
          const group = groups.find((g) => String(g.key).slice(0, 7) === month);
          const inflow = round2(group?.sums.debit ?? 0);
          const outflow = round2(group?.sums.credit ?? 0);
          return { month, inflow, outflow, net: round2(inflow - outflow) };
        });
        const sum = (k: 'inflow' | 'outflow' | 'net') => round2(series.reduce((s, m) => s + m[k], 0));
        return {
          workspace: slug,
          currency,
          asOf: today,
          erpVersion: tenant.version,
          months: series,
          totals: { inflow: sum('inflow'), outflow: sum('outflow'), net: sum('net') },
        } satisfies Cashflow;
      });
    },

    alerts(slug) {
      return cached(`erp:dashboard:${slug}:alerts`, async () => {
        const { tenant, client } = await resolve(slug);
        const today = isoDay(new Date());
        const companies = await companiesOf(client);
        const main = companies[0]!;
        const currency = main.currency;
        // the main company's, in its currency: amount_residual is in each invoice's own currency, never added up
        const overdueDomain = [['move_type', '=', 'out_invoice'], ['company_id', '=', main.id], ...open, ['invoice_date_due', '<', today]];
        const unreconciledDomain = [['is_reconciled', '=', false], ['company_id', '=', main.id]];
        const [overdueTotals, oldestInvoices, bankTotals, oldestLines] = await Promise.all([
          sumBy(client, tenant.version, 'account.move', overdueDomain, [], ['amount_residual_signed']),
          client.executeKw<{ id: number; name: string; partner_id: [number, string] | false; invoice_date_due: string; amount_residual_signed: number }[]>(
            'account.move',
            'search_read',
            [overdueDomain],
            { fields: ['name', 'partner_id', 'invoice_date_due', 'amount_residual_signed'], order: 'invoice_date_due asc, id asc', limit: 5 },
          ),
          sumBy(client, tenant.version, 'account.bank.statement.line', unreconciledDomain, [], ['amount']),
          client.executeKw<{ id: number; date: string; payment_ref: string | false; amount: number; journal_id: [number, string] | false }[]>(
            'account.bank.statement.line',
            'search_read',
            [unreconciledDomain],
            { fields: ['date', 'payment_ref', 'amount', 'journal_id'], order: 'date asc, id asc', limit: 5 },
          ),
        ]);
        const daysBetween = (a: string, b: string) => Math.round((Date.parse(b) - Date.parse(a)) / 86_400_000);
        const overdueCount = overdueTotals.reduce((n, g) => n + g.count, 0);
        const overdueTotal = total(overdueTotals, 'amount_residual_signed');
        const lineCount = bankTotals.reduce((n, g) => n + g.count, 0);
        const lineTotal = total(bankTotals, 'amount');
        const alerts: Alerts['alerts'] = [];
        if (overdueCount) {
          const worst = daysBetween(oldestInvoices[0]!.invoice_date_due, today);
          alerts.push({
            kind: 'overdue_invoices',
            severity: worst > 60 ? 'critical' : 'warning',
            message: `${overdueCount} customer invoice${overdueCount === 1 ? ' is' : 's are'} overdue (${overdueTotal.toFixed(2)} ${currency}); the oldest by ${worst} days`,
          });
        }
        if (lineCount) {
          alerts.push({
            kind: 'unreconciled_bank_lines',
            severity: daysBetween(oldestLines[0]!.date, today) > 30 ? 'warning' : 'info',
            message: `${lineCount} bank statement line${lineCount === 1 ? ' is' : 's are'} not reconciled`,
          });
        }
        return {
          workspace: slug,
          currency,
          asOf: today,
          erpVersion: tenant.version,
          overdueInvoices: {
            count: overdueCount,
            total: overdueTotal,
            oldest: oldestInvoices.map((m) => ({
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
            oldest: oldestLines.map((l) => ({ id: l.id, date: l.date, label: orNull(l.payment_ref), amount: round2(l.amount), journal: l.journal_id ? l.journal_id[1] : null })),
          },
          alerts,
        } satisfies Alerts;
      });
    },
  };
}
