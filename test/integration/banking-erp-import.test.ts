/**
 * Booked bank transactions into the tenant ERP: the operator's import reads them through the banking
 * service with the workspace's consent (bank stand-in, SCA completed by HTTP) and writes
 * `account.bank.statement.line` records over XML-RPC (ERP stand-in on a real tenant database), once
 * per transaction; the dashboards' unreconciled bank lines then include them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import { startBankStandIn, type BankStandIn } from '../../sandbox/bank/server.js';
import { startBanking } from '../../services/banking/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { queryTenantDb, startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';
import { addUser, call, createKey, login } from '../support/workspace-api.js';
import { testKeys } from '../support/service-keys.js';

let bed: ErpTestBed;
let cfg: Config;
let pool: Pool;
let bank: BankStandIn;
let banking: Awaited<ReturnType<typeof startBanking>>;
let api: Awaited<ReturnType<typeof startApi>>;
let base: string;
let tenant: TestTenant;
let bankKey: string;
let dashboardKey: string;

const day = (offset = 0) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  bank = await startBankStandIn({ bankId: 'sandbox' });
  const bankingPort = await freePort();
  bed = await startErpTestBed({
    poolSize: 2,
    settings: {
      BANKING_URL: `http://127.0.0.1:${bankingPort}`,
      BANKING_PORT: String(bankingPort),
      BANKING_BANKS: `sandbox=${bank.url}`,
    },
  });
  ({ cfg, pool } = bed);
  banking = await startBanking(cfg);
  api = await startApi(cfg);
  base = cfg.API_PUBLIC_URL;
  tenant = await bed.provision({ tier: 'starter', version: '18' });
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]);
  const owner = await login(base, await addUser(pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]));
  bankKey = (await createKey(base, owner, { name: 'bank', scopes: ['banking:read'] })).token;
  dashboardKey = (await createKey(base, owner, { name: 'dash', scopes: ['dashboard:read'] })).token;
  // the workspace's consent, SCA completed as the PSU's browser does
  const consent = await call(base, 'POST', '/api/banking/sandbox/consent', {
    token: bankKey,
    body: { frequencyPerDay: 50 },
  });
  expect(consent.status).toBe(201);
  const page = await (await fetch(consent.body.scaRedirect)).text();
  const action = /action="([^"]+)"/.exec(page)![1]!;
  const sca = await fetch(new URL(action, bank.url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'decision=approve',
  });
  expect(sca.status).toBe(200);
});

afterAll(async () => {
  await api?.close();
  await banking?.close();
  await bank?.close();
  await bed?.close();
});

const importCall = (body: Record<string, unknown>, key = testKeys.operator) =>
  call(base, 'POST', '/api/ops/banking/import', { headers: { 'x-api-key': key }, body });

describe('POST /api/ops/banking/import', () => {
  it('needs the operator key', async () => {
    expect(
      (
        await call(base, 'POST', '/api/ops/banking/import', {
          body: { tenant: tenant.name, bankId: 'sandbox', accountId: 'sandbox-cur-1' },
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await importCall(
          { tenant: tenant.name, bankId: 'sandbox', accountId: 'sandbox-cur-1' },
          'not-a-key-0000000000000000',
        )
      ).status,
    ).toBe(401);
  });

  it('imports each booked transaction once as a bank statement line; the dashboards count them as unreconciled', async () => {
    const period = { dateFrom: day(-30), dateTo: day(-3) };
    const bankSide = await call(
      base,
      'GET',
      `/api/banking/sandbox/accounts/sandbox-cur-1/transactions?bookingStatus=booked&dateFrom=${period.dateFrom}&dateTo=${period.dateTo}`,
      { token: bankKey },
    );
    const booked = bankSide.body.transactions.booked as {
      transactionId: string;
      bookingDate: string;
      transactionAmount: { amount: string };
    }[];
    expect(booked.length).toBeGreaterThan(5);
    const before = await queryTenantDb<{ n: string }>(
      cfg,
      tenant.database,
      'SELECT count(*) AS n FROM account_bank_statement_line WHERE NOT is_reconciled',
    );

    const first = await importCall({ tenant: tenant.name, bankId: 'sandbox', accountId: 'sandbox-cur-1', ...period });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ booked: booked.length, imported: booked.length, skipped: 0 });

    const lines = await queryTenantDb<{
      unique_import_id: string;
      date: string;
      amount: string;
      payment_ref: string;
      journal_id: number;
      is_reconciled: boolean;
    }>(
      cfg,
      tenant.database,
      `SELECT unique_import_id, to_char(date, 'YYYY-MM-DD') AS date, amount::text, payment_ref, journal_id, is_reconciled FROM account_bank_statement_line WHERE unique_import_id LIKE 'psd2:%' ORDER BY unique_import_id`,
    );
    expect(lines).toHaveLength(booked.length);
    for (const t of booked) {
      const line = lines.find((l) => l.unique_import_id === `psd2:sandbox:sandbox-cur-1:${t.transactionId}`)!;
      expect(line).toBeDefined();
      expect(line.date).toBe(t.bookingDate);
      expect(Number(line.amount)).toBeCloseTo(Number(t.transactionAmount.amount), 2);
      expect(line.journal_id).toBe(first.body.journalId);
      expect(line.is_reconciled).toBe(false);
    }

    // the second run finds them all there
    const again = await importCall({ tenant: tenant.name, bankId: 'sandbox', accountId: 'sandbox-cur-1', ...period });
    expect(again.body).toMatchObject({ booked: booked.length, imported: 0, skipped: booked.length });
    // an overlapping period imports only the days not seen yet
    const wider = await importCall({
      tenant: tenant.name,
      bankId: 'sandbox',
      accountId: 'sandbox-cur-1',
      dateFrom: day(-40),
      dateTo: day(-3),
    });
    const older = (
      await call(
        base,
        'GET',
        `/api/banking/sandbox/accounts/sandbox-cur-1/transactions?bookingStatus=booked&dateFrom=${day(-40)}&dateTo=${day(-31)}`,
        { token: bankKey },
      )
    ).body.transactions.booked.length;
    expect(wider.body).toMatchObject({ imported: older, skipped: booked.length });
    const total = await queryTenantDb<{ n: string }>(
      cfg,
      tenant.database,
      `SELECT count(*) AS n FROM account_bank_statement_line WHERE unique_import_id LIKE 'psd2:%'`,
    );
    expect(Number(total[0]!.n)).toBe(booked.length + older);

    const alerts = await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/alerts`, { token: dashboardKey });
    expect(alerts.status).toBe(200);
    expect(alerts.body.unreconciledBankLines.count).toBe(Number(before[0]!.n) + booked.length + older);
  });

  it('concurrent imports of the same period write each line once', async () => {
    const body = {
      tenant: tenant.name,
      bankId: 'sandbox',
      accountId: 'sandbox-sav-1',
      dateFrom: day(-300),
      dateTo: day(-3),
    };
    const results = await Promise.all([importCall(body), importCall(body), importCall(body)]);
    for (const r of results) expect(r.status).toBe(200);
    const imported = results.reduce((n, r) => n + (r.body.imported as number), 0);
    const rows = await queryTenantDb<{ n: string; distinct: string }>(
      cfg,
      tenant.database,
      `SELECT count(*) AS n, count(DISTINCT unique_import_id) AS distinct FROM account_bank_statement_line WHERE unique_import_id LIKE 'psd2:sandbox:sandbox-sav-1:%'`,
    );
    expect(Number(rows[0]!.n)).toBe(results[0]!.body.booked);
    expect(rows[0]!.distinct).toBe(rows[0]!.n);
    expect(imported).toBe(results[0]!.body.booked);
  });

  it("writes with the bank import user: the dashboards' API user stays read-only", async () => {
    // the groups by external id (ids differ between databases), and every company of the tenant
    const users = await queryTenantDb<{ login: string; groups: string[]; companies: number }>(
      cfg,
      tenant.database,
      `SELECT u.login,
              array_agg(d.module || '.' || d.name ORDER BY d.module, d.name) AS groups,
              (SELECT count(*)::int FROM res_company_users_rel c WHERE c.user_id = u.id) AS companies
         FROM res_users u JOIN res_groups_users_rel r ON r.uid = u.id
         JOIN ir_model_data d ON d.model = 'res.groups' AND d.res_id = r.gid
        WHERE u.login LIKE '%@${tenant.database}' GROUP BY u.id, u.login ORDER BY u.login`,
    );
    const companies = Number(
      (await queryTenantDb<{ n: string }>(cfg, tenant.database, 'SELECT count(*) AS n FROM res_company'))[0]!.n,
    );
    expect(users).toEqual([
      { login: `api@${tenant.database}`, groups: ['account.group_account_readonly', 'base.group_user'], companies },
      { login: `bank-import@${tenant.database}`, groups: ['account.group_account_user', 'base.group_user'], companies },
    ]);
  });

  it('a tenant without a consent at that bank → 409 naming what to do; an unknown tenant → 404', async () => {
    expect((await importCall({ tenant: 'no-such-tenant', bankId: 'sandbox', accountId: 'sandbox-cur-1' })).status).toBe(
      404,
    );
    const other = await bed.provision({ tier: 'starter', version: '18' });
    const res = await importCall({ tenant: other.name, bankId: 'sandbox', accountId: 'sandbox-cur-1' });
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('no valid consent');
  });
});
