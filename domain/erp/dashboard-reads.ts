/**
 * What the dashboards read from a workspace's tenant ERP, and what an ERP failure means to their
 * caller. The way there:
 *
 * workspace slug → tenant (tenants.workspace_id) → route host + database (http-routes.ts)
 * → API user (tenant_erp_credentials) → XML-RPC (JSON-2 with the API key on 19+).
 *
 * The reads only fetch; the figures are computed from them by dashboards.ts.
 */
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { AppError, type ErrorCode } from '../../lib/errors.js';
import { erpClientFor, loadErpApiCredentials } from './api-user.js';
import { ErpFault, ErpUnreachable, orNull, type ErpClient, type ErpUnreachableReason } from './client.js';
import { erpVersionOfNamespace, type ErpVersion } from '../tenants/types.js';
import { workspaceTenantWithRoute } from '../tenants/http-routes.js';

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
    const credentials = await loadErpApiCredentials(deps.pool, deps.config.SECRETS_KEY, row.tenant);
    if (!credentials) throw new AppError('NOT_FOUND', `The tenant ERP of workspace ${slug} has no API user yet`);
    const version = erpVersionOfNamespace(row.namespace);
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

  /** The companies the API user sees, in Odoo's order: the first is the main one. */
  async companies(): Promise<Company[]> {
    const companies = await this.client.executeKw<
      { id: number; name: string; currency_id: [number, string] | false }[]
    >('res.company', 'search_read', [[]], {
      fields: ['name', 'currency_id'],
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
