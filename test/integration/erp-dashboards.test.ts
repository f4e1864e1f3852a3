/**
 * The dashboard figures of a workspace, read from its tenant ERP over real XML-RPC as the API user,
 * for ERP versions 17, 18 and 19, checked against independent SQL on the tenant database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Value } from 'typebox/value';
import type { Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import {
  AlertsSchema,
  CashflowSchema,
  KpisSchema,
  createDashboardService,
  type DashboardService,
} from '../../domain/erp/dashboards.js';
import { AppError } from '../../lib/errors.js';
import type { ErpVersion } from '../../domain/tenants/types.js';
import {
  createWorkspaceWithTenant,
  queryTenantDb,
  startErpTestBed,
  type ErpTestBed,
  type TestTenant,
} from '../support/erp-tenant.js';

let bed: ErpTestBed;
let cfg: Config;
let pool: Pool;
let service: DashboardService;
const tenants = new Map<ErpVersion, TestTenant>();

const today = () => new Date().toISOString().slice(0, 10);
const num = (v: unknown) => Math.round(Number(v ?? 0) * 100) / 100;

beforeAll(async () => {
  bed = await startErpTestBed();
  ({ cfg, pool } = bed);
  service = createDashboardService({ pool, config: cfg });
  for (const [version, tier] of [
    ['17', 'starter'],
    ['18', 'pro'],
    ['19', 'enterprise'],
  ] as const) {
    tenants.set(version, await bed.provision({ tier, version }));
  }
});

afterAll(async () => {
  await bed?.close();
});

async function expectedKpis(database: string) {
  const day = today();
  const [row] = await queryTenantDb<Record<string, string>>(
    cfg,
    database,
    `SELECT
       (SELECT sum(amount_untaxed_signed) FROM account_move WHERE move_type IN ('out_invoice','out_refund') AND state = 'posted' AND company_id = 1 AND invoice_date >= date_trunc('month', $1::date) AND invoice_date <= $1::date) AS revenue,
       (SELECT sum(amount_residual_signed) FROM account_move WHERE move_type IN ('out_invoice','out_refund') AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1) AS receivables,
       (SELECT sum(amount_residual_signed) FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1 AND invoice_date_due < $1::date) AS overdue,
       (SELECT count(*) FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1 AND invoice_date_due < $1::date) AS overdue_count,
       (SELECT -sum(amount_residual_signed) FROM account_move WHERE move_type IN ('in_invoice','in_refund') AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1) AS payables,
       (SELECT sum(l.balance) FROM account_move_line l JOIN account_journal j ON j.default_account_id = l.account_id WHERE j.type IN ('bank','cash','credit') AND j.company_id = 1 AND l.company_id = 1 AND l.parent_state = 'posted') AS cash`,
    [day],
  );
  return row!;
}

describe.each(['17', '18', '19'] as const)('dashboards on ERP %s', (version) => {
  it('KPIs match the tenant database', async () => {
    const t = tenants.get(version)!;
    const kpis = await service.kpis(t.workspace);
    const want = await expectedKpis(t.database);
    expect(Value.Check(KpisSchema, kpis)).toBe(true);
    expect(kpis).toMatchObject({ workspace: t.workspace, currency: 'EUR', erpVersion: version, asOf: today() });
    expect(kpis.revenue).toBeCloseTo(num(want.revenue), 2);
    expect(kpis.receivables).toBeCloseTo(num(want.receivables), 2);
    expect(kpis.overdueReceivables).toBeCloseTo(num(want.overdue), 2);
    expect(kpis.overdueInvoiceCount).toBe(Number(want.overdue_count));
    expect(kpis.payables).toBeCloseTo(num(want.payables), 2);
    expect(kpis.cashBalance).toBeCloseTo(num(want.cash), 2);
    expect(kpis.revenue).toBeGreaterThan(0); // the demo data makes this month meaningful
    expect(kpis.cashJournals.map((j) => j.type).sort()).toEqual(
      version === '17' ? ['bank', 'cash'] : ['bank', 'cash', 'credit'],
    );
    // per company, each in its own currency; the main company's figures are the top-level ones
    expect(kpis.companies.map((c) => c.currency)).toEqual(['EUR', 'USD']);
    expect(kpis.companies[0]).toMatchObject({
      receivables: kpis.receivables,
      cashBalance: kpis.cashBalance,
      revenue: kpis.revenue,
    });
    const [us] = await queryTenantDb<Record<string, string>>(
      cfg,
      t.database,
      `SELECT (SELECT sum(amount_residual_signed) FROM account_move WHERE company_id = 2 AND move_type IN ('out_invoice','out_refund') AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked')) AS receivables,
              (SELECT sum(l.balance) FROM account_move_line l JOIN account_journal j ON j.default_account_id = l.account_id AND j.company_id = 2 WHERE j.type IN ('bank','cash','credit') AND l.company_id = 2 AND l.parent_state = 'posted') AS cash`,
    );
    expect(kpis.companies[1]!.receivables).toBeCloseTo(num(us!.receivables), 2);
    expect(kpis.companies[1]!.cashBalance).toBeCloseTo(num(us!.cash), 2);
    expect(kpis.companies[1]!.receivables).toBeGreaterThan(0);
  });

  it('cash flow per month matches the bank and cash accounts', async () => {
    const t = tenants.get(version)!;
    const flow = await service.cashflow(t.workspace, { months: 4 });
    expect(Value.Check(CashflowSchema, flow)).toBe(true);
    expect(flow.months).toHaveLength(4);
    expect(flow.months[3]!.month).toBe(today().slice(0, 7));
    const rows = await queryTenantDb<{ month: string; inflow: string; outflow: string }>(
      cfg,
      t.database,
      `SELECT to_char(l.date, 'YYYY-MM') AS month, sum(l.debit) AS inflow, sum(l.credit) AS outflow
         FROM account_move_line l JOIN account_journal j ON j.default_account_id = l.account_id
        WHERE j.type IN ('bank','cash','credit') AND j.company_id = 1 AND l.company_id = 1 AND l.parent_state = 'posted' AND l.date <= $1::date
        GROUP BY 1`,
      [today()],
    );
    for (const m of flow.months) {
      const want = rows.find((r) => r.month === m.month);
      expect(m.inflow).toBeCloseTo(num(want?.inflow), 2);
      expect(m.outflow).toBeCloseTo(num(want?.outflow), 2);
      expect(m.net).toBeCloseTo(m.inflow - m.outflow, 2);
    }
  });

  it('alerts list the overdue invoices and the unreconciled bank lines', async () => {
    const t = tenants.get(version)!;
    const alerts = await service.alerts(t.workspace);
    expect(Value.Check(AlertsSchema, alerts)).toBe(true);
    const [want] = await queryTenantDb<Record<string, string>>(
      cfg,
      t.database,
      `SELECT
         (SELECT count(*) FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1 AND invoice_date_due < $1::date) AS overdue_count,
         (SELECT sum(amount_residual_signed) FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1 AND invoice_date_due < $1::date) AS overdue_total,
         (SELECT name FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state IN ('not_paid','partial','blocked') AND company_id = 1 AND invoice_date_due < $1::date ORDER BY invoice_date_due, id LIMIT 1) AS oldest,
         (SELECT count(*) FROM account_bank_statement_line WHERE NOT is_reconciled AND company_id = 1) AS lines,
         (SELECT sum(amount) FROM account_bank_statement_line WHERE NOT is_reconciled AND company_id = 1) AS lines_total`,
      [today()],
    );
    expect(alerts.overdueInvoices.count).toBe(Number(want!.overdue_count));
    expect(alerts.overdueInvoices.total).toBeCloseTo(num(want!.overdue_total), 2);
    expect(alerts.unreconciledBankLines.count).toBe(Number(want!.lines));
    expect(alerts.unreconciledBankLines.total).toBeCloseTo(num(want!.lines_total), 2);
    expect(alerts.unreconciledBankLines.count).toBeGreaterThan(0);
    if (want!.oldest) expect(alerts.overdueInvoices.oldest[0]!.number).toBe(want!.oldest);
    expect(alerts.overdueInvoices.oldest.every((i) => i.daysOverdue > 0)).toBe(true);
    expect(alerts.alerts.map((a) => a.kind)).toContain('unreconciled_bank_lines');
    // the USD invoice counts with its EUR amount, never its USD one
    const [fx] = await queryTenantDb<{ amount_residual: string; amount_residual_signed: string; name: string }>(
      cfg,
      t.database,
      `SELECT m.amount_residual, m.amount_residual_signed, m.name FROM account_move m JOIN res_currency c ON c.id = m.currency_id WHERE c.name = 'USD' AND m.company_id = 1`,
    );
    expect(num(fx!.amount_residual)).not.toBeCloseTo(num(fx!.amount_residual_signed), 2);
    const listed = alerts.overdueInvoices.oldest.find((i) => i.number === fx!.name);
    if (listed) expect(listed.amountDue).toBeCloseTo(num(fx!.amount_residual_signed), 2);
  });
});

describe('caching and errors', () => {
  it('serves a cached result until it expires, then the new figure', async () => {
    const t = await bed.provision({ tier: 'starter', version: '18' });
    const service = createDashboardService({ pool, config: cfg, cacheTtlMs: 2_000 });
    const first = await service.kpis(t.workspace);
    await queryTenantDb(
      cfg,
      t.database,
      `INSERT INTO account_move (name, move_type, state, payment_state, date, invoice_date, invoice_date_due, partner_id, journal_id, company_id, currency_id,
                                 amount_untaxed, amount_tax, amount_total, amount_residual, amount_untaxed_signed, amount_total_signed, amount_residual_signed)
       VALUES ('INV/TEST/1', 'out_invoice', 'posted', 'not_paid', $1, $1, $1, 10, 1, 1, 1, 1000, 190, 1190, 1190, 1000, 1190, 1190)`,
      [today()],
    );
    expect((await service.kpis(t.workspace)).revenue).toBe(first.revenue); // cached
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // what 30 s do to the default cache
    const fresh = await service.kpis(t.workspace);
    expect(fresh.revenue).toBeCloseTo(first.revenue + 1000, 2);
    expect(fresh.receivables).toBeCloseTo(first.receivables + 1190, 2);
  });

  it('answers NOT_FOUND for a workspace without a tenant, without a route, or without an API user', async () => {
    const lonely = `w-${Date.now().toString(36)}`;
    await pool.query(`INSERT INTO workspaces (slug, name) VALUES ($1, 'No tenant')`, [lonely]);
    const unrouted = await createWorkspaceWithTenant(pool, { tier: 'pro', version: '18' });
    for (const [slug, message] of [
      [lonely, 'has no tenant ERP'],
      [unrouted, 'not provisioned yet'],
      ['no-such-workspace', 'has no tenant ERP'],
    ] as const) {
      const err = await service.alerts(slug).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('NOT_FOUND');
      expect((err as AppError).message).toContain(message);
    }
    await pool.query(
      `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, 'plana-odoo-18', $1)`,
      [`${unrouted}.${cfg.TENANT_DOMAIN}`, unrouted],
    );
    await expect(service.kpis(unrouted)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('no API user'),
    });
  });

  it('answers BAD_GATEWAY without ERP internals when the ERP rejects the API user', async () => {
    const t = await bed.provision({ tier: 'starter', version: '17' });
    await queryTenantDb(cfg, t.database, `UPDATE res_users SET active = false WHERE login LIKE 'api@%'`);
    const err = await service.kpis(t.workspace).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'BAD_GATEWAY' });
    expect((err as Error).message).not.toContain('Traceback');
  });

  it('answers UNAVAILABLE naming the ERP when the ERP cannot be reached', async () => {
    const t = await bed.provision({ tier: 'starter', version: '18' });
    const cut = createDashboardService({ pool, config: { ...cfg, ERP_URL: 'http://127.0.0.1:1' } });
    const err = await cut.kpis(t.workspace).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('cannot be reached') });
  });
});
