/**
 * The ERP stand-in over real HTTP, speaking Odoo's XML-RPC, on real tenant databases cloned from
 * the templates: routing by Host, the health probe, authentication, the ORM methods, faults.
 */
import { request } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import {
  type ErpFault,
  ErpUnreachable,
  createErpClient,
  openErpSession,
  parseMethodResponse,
  xmlRpcCall,
  XmlRpcFault,
  type ErpClient,
} from '../../domain/erp/client.js';
import {
  ensureErpBankImportUser,
  erpApiUserDeps,
  loadErpCredentials,
  tenantAdminPassword,
} from '../../domain/erp/api-user.js';
import { erpMajorVersion } from '../../domain/erp/admin-session.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { dropTenantDatabase, tenantHostname } from '../../domain/erp/tenant-database.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
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
let admin: Pool;
let erp: ErpStandIn;
let tenant: TestTenant;
let api: ErpClient;
let credentials: { login: string; password: string };

function get(
  path: string,
  host: string,
  method = 'GET',
  body?: string,
): Promise<{ status: number; type: string; body: string }> {
  const url = new URL(erp.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: url.hostname, port: url.port, path, method, headers: { host, 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type']),
            body: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A request with a cookie, as a browser sends it: status, body, the session cookie set, the redirect. */
function send(
  path: string,
  host: string,
  body: string | undefined,
  cookie?: string,
  method = 'POST',
): Promise<{ status: number; body: string; cookie?: string; location?: string }> {
  const url = new URL(erp.url);
  const headers: Record<string, string> = { host, 'content-type': 'application/json' };
  if (cookie) headers.cookie = cookie;
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString(),
          cookie: res.headers['set-cookie']?.find((c) => c.startsWith('session_id='))?.split(';')[0],
          location: res.headers.location,
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

const rpc = (host: string, path: string, method: string, params: unknown[]) =>
  xmlRpcCall({ baseUrl: erp.url, host }, path, method, params);
const fault = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('expected an XML-RPC fault'),
    (e: unknown) => e as ErpFault,
  );

beforeAll(async () => {
  bed = await startErpTestBed();
  ({ cfg, pool, admin, erp } = bed);
  tenant = await bed.provision({ tier: 'pro', version: '18' });
  credentials = (await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant.name))!;
  // the bank import user too, while the tenant admin still has its own password (a test below replaces it)
  await ensureErpBankImportUser(erpApiUserDeps(cfg, pool, erp.url), { tenant: tenant.name, database: tenant.database });
  api = createErpClient({ baseUrl: erp.url, host: tenant.host, db: tenant.database, ...credentials });
});

afterAll(() => bed?.close());

/** An XML-RPC client as the tenant's ERP administrator, whose password is set to `password` first. */
async function erpAdminClient(password: string): Promise<ErpClient> {
  await queryTenantDb(cfg, tenant.database, `UPDATE res_users SET password = $1 WHERE login = 'admin'`, [
    hashOdooPassword(password),
  ]);
  return createErpClient({ baseUrl: erp.url, host: tenant.host, db: tenant.database, login: 'admin', password });
}

describe('routing and the health probe', () => {
  it('answers 200 {"status":"pass"} for a routed tenant whose database is up', async () => {
    const res = await get('/web/health', `${tenant.host}:8069`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ status: 'pass' });
  });

  it('answers /web/health 503 while the route exists but the database does not (§7: route up, no worker; real Odoo itself would answer 200); authenticate names the database in its fault', async () => {
    const name = await createWorkspaceWithTenant(pool, { tier: 'starter', version: '17' });
    const host = tenantHostname(name, cfg.TENANT_DOMAIN);
    await pool.query(
      `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ($1, $2, 'plana-odoo-17', $1)`,
      [host, name],
    );
    const res = await get('/web/health', host);
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toEqual({ status: 'fail', reason: `database "${host}" does not exist` });
    // while it is being installed from scratch (under its install name), the answer says so
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(`${host}__installing`)}`);
    try {
      const installing = await get('/web/health', host);
      expect(installing.status).toBe(503);
      expect(JSON.parse(installing.body)).toEqual({
        status: 'fail',
        reason: `database "${host}" is being installed from scratch`,
      });
    } finally {
      await admin.query(`DROP DATABASE ${pg.escapeIdentifier(`${host}__installing`)}`);
    }
    for (const password of ['any', '']) {
      const err = await xmlRpcCall({ baseUrl: erp.url, host }, '/xmlrpc/2/common', 'authenticate', [
        host,
        'api@x',
        password,
        {},
      ]).catch((e: unknown) => e);
      expect((err as ErpFault).message).toContain(`database "${host}" does not exist`);
    }
  });

  it.each([
    ['GET', '/web/health'],
    ['POST', '/xmlrpc/2/common'],
    ['GET', '/web/login'],
  ])('answers 404 to %s %s for a host without a route', async (method, path) => {
    const res = await get(path, 'nobody.erp.plana.test', method);
    expect(res.status).toBe(404);
  });

  it('follows route changes within about a second: a removed route gives 404', async () => {
    const other = await bed.provision({ tier: 'starter', version: '18' });
    expect((await get('/web/health', other.host)).status).toBe(200);
    await pool.query('DELETE FROM tenant_routes WHERE host = $1', [other.host]);
    await vi.waitFor(async () => expect((await get('/web/health', other.host)).status).toBe(404), {
      timeout: 5_000,
      interval: 200,
    });
    await dropTenantDatabase(admin, other.database);
  });

  it('turns /web/health to 503 when the tenant database is dropped; authenticate then faults', async () => {
    const other = await bed.provision({ tier: 'starter', version: '19' });
    expect((await get('/web/health', other.host)).status).toBe(200);
    await dropTenantDatabase(admin, other.database);
    expect((await get('/web/health', other.host)).status).toBe(503);
    const err = await xmlRpcCall({ baseUrl: erp.url, host: other.host }, '/xmlrpc/2/common', 'authenticate', [
      other.database,
      'admin',
      'x',
      {},
    ]).catch((e: unknown) => e);
    expect((err as ErpFault).message).toContain(`database "${other.database}" does not exist`);
  });

  it('refuses JSON-RPC without a web session with the session-expired error, in HTTP 200 as real Odoo 18 does', async () => {
    const res = await get(
      '/web/dataset/call_kw/res.partner/search',
      tenant.host,
      'POST',
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'call',
        params: { model: 'res.partner', method: 'search', args: [[]], kwargs: {} },
      }),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).error).toMatchObject({
      code: 100,
      message: 'Odoo Session Expired',
      data: { name: 'odoo.http.SessionExpiredException' },
    });
  });

  it('opens a web session with one password check; a password change ends it; a wrong password is AccessDenied', async () => {
    const password = 'session-admin-password';
    await queryTenantDb(cfg, tenant.database, `UPDATE res_users SET password = $1 WHERE login = 'admin'`, [
      hashOdooPassword(password),
    ]);
    const wrong = await openErpSession({
      baseUrl: erp.url,
      host: tenant.host,
      db: tenant.database,
      login: 'admin',
      password: 'nope',
    }).catch((e: unknown) => e as ErpFault);
    expect(wrong).toMatchObject({ code: 3, message: 'Access Denied' });

    const session = await openErpSession({
      baseUrl: erp.url,
      host: tenant.host,
      db: tenant.database,
      login: 'admin',
      password,
    });
    const companies = await session.callKw<number[]>('res.company', 'search', [[]]);
    expect(companies.length).toBeGreaterThan(0);
    // an ORM error comes back as the fault XML-RPC would have carried
    const missing = await session
      .callKw('res.partner', 'read', [[999_999]], { fields: ['name'] })
      .catch((e: unknown) => e as ErpFault);
    expect(missing).toMatchObject({ code: 2 });

    await session.callKw('res.users', 'write', [[session.uid], { password: `${password}-2` }]);
    const ended = await session.callKw('res.company', 'search', [[]]).catch((e: unknown) => e as ErpFault);
    expect(ended).toMatchObject({ code: 3 });
    expect((ended as ErpFault).message).toContain('Session expired');
  });

  it("ignores another tenant's session cookie (it plays the tenant ingress): signed out on that host, the session still valid on its own", async () => {
    const [a, b] = [
      await bed.provision({ tier: 'starter', version: '18' }),
      await bed.provision({ tier: 'starter', version: '18' }),
    ];
    const rpc = (host: string, path: string, cookie?: string, params: unknown = {}) =>
      send(path, host, JSON.stringify({ jsonrpc: '2.0', method: 'call', params }), cookie);
    const login = await rpc(a.host, '/web/session/authenticate', undefined, {
      db: a.database,
      login: 'admin',
      password: tenantAdminPassword(cfg.SECRETS_KEY, a.database),
    });
    const cookie = login.cookie!;
    expect(cookie).toMatch(/^session_id=/);
    const uid = (host: string) =>
      rpc(host, '/web/session/get_session_info', cookie).then(
        (r) => JSON.parse(r.body) as { result?: { uid?: number }; error?: unknown },
      );
    expect((await uid(a.host)).result?.uid).toBeGreaterThan(0);
    // on the other tenant's host: signed out (Odoo's session-expired answer, its login page)
    expect((await uid(b.host)).error).toMatchObject({ data: { name: 'odoo.http.SessionExpiredException' } });
    const web = await send('/odoo', b.host, undefined, cookie, 'GET');
    expect(web.status).toBe(303);
    expect(web.location).toMatch(/^\/web\/login/);
    // and still signed in on its own host
    expect((await uid(a.host)).result?.uid).toBeGreaterThan(0);
    expect((await send('/odoo', a.host, undefined, cookie, 'GET')).status).toBe(200);
  });

  it('serves an HTML login page', async () => {
    const res = await get('/web/login', tenant.host);
    expect(res.status).toBe(200);
    expect(res.type).toContain('text/html');
    expect(res.body).toContain('name="password"');
  });
});

describe('/xmlrpc/2/common', () => {
  it('reports the version of the tenant ERP', async () => {
    const version = await rpc(tenant.host, '/xmlrpc/2/common', 'version', []);
    expect(version).toMatchObject({ server_version: '18.0', server_serie: '18.0', protocol_version: 1 });
  });

  it('authenticates the API user with its password and returns its uid', async () => {
    const uid = await rpc(tenant.host, '/xmlrpc/2/common', 'authenticate', [
      tenant.database,
      credentials.login,
      credentials.password,
      {},
    ]);
    const [row] = await queryTenantDb<{ id: number }>(
      cfg,
      tenant.database,
      'SELECT id FROM res_users WHERE login = $1',
      [credentials.login],
    );
    expect(uid).toBe(row!.id);
    expect(
      await rpc(tenant.host, '/xmlrpc/2/common', 'login', [tenant.database, credentials.login, credentials.password]),
    ).toBe(row!.id);
  });

  it.each([
    ['a wrong password', (c: typeof credentials) => [c.login, `${c.password}x`]],
    ['an unknown login', (c: typeof credentials) => ['nobody@example.test', c.password]],
    ['an empty password', (c: typeof credentials) => [c.login, '']],
  ])('returns false for %s', async (_, args) => {
    expect(
      await rpc(tenant.host, '/xmlrpc/2/common', 'authenticate', [tenant.database, ...args(credentials), {}]),
    ).toBe(false);
  });

  it("refuses another tenant's database name on this host", async () => {
    const err = await fault(
      rpc(tenant.host, '/xmlrpc/2/common', 'authenticate', ['erp_tpl_pro_18', 'admin', 'admin', {}]),
    );
    expect(err.code).toBe(3);
  });
});

describe('/xmlrpc/2/object execute_kw', () => {
  it('search_read with a compound prefix domain returns exactly the matching rows, with false for empty values', async () => {
    const domain = [
      '|',
      '&',
      ['move_type', '=', 'out_invoice'],
      ['state', '=', 'draft'],
      '&',
      ['move_type', '=', 'in_invoice'],
      ['amount_total', '>=', 3000],
    ];
    const rows = await api.executeKw<Record<string, unknown>[]>('account.move', 'search_read', [domain], {
      fields: ['name', 'ref', 'partner_id', 'state', 'move_type', 'amount_total', 'invoice_date'],
      order: 'id asc',
    });
    const expected = await queryTenantDb<{
      id: number;
      name: string;
      ref: string | null;
      partner_id: number;
      partner: string;
      invoice_date: string;
    }>(
      cfg,
      tenant.database,
      `SELECT m.id, m.name, m.ref, m.partner_id, p.complete_name AS partner, to_char(m.invoice_date, 'YYYY-MM-DD') AS invoice_date
         FROM account_move m JOIN res_partner p ON p.id = m.partner_id
        WHERE (m.move_type = 'out_invoice' AND m.state = 'draft') OR (m.move_type = 'in_invoice' AND m.amount_total >= 3000)
        ORDER BY m.id`,
    );
    expect(expected.length).toBeGreaterThan(3);
    expect(rows.map((r) => r.id)).toEqual(expected.map((e) => e.id));
    const first = rows.find((r) => r.move_type === 'out_invoice')!;
    const want = expected.find((e) => e.id === first.id)!;
    expect(first.ref).toBe(false); // customer invoices have no reference: Odoo sends False
    expect(first.partner_id).toEqual([want.partner_id, want.partner]); // many2one: [id, display name]
    expect(first.invoice_date).toBe(want.invoice_date);
    expect(Object.keys(first).sort()).toEqual([
      'amount_total',
      'id',
      'invoice_date',
      'move_type',
      'name',
      'partner_id',
      'ref',
      'state',
    ]);
  });

  it('supports negation, in/not in, ilike, limit, offset and order', async () => {
    const domain = ['!', ['customer_rank', '=', 0], ['name', 'ilike', 'a'], ['city', 'not in', ['Berlin', 'Hamburg']]];
    const ids = await api.executeKw<number[]>('res.partner', 'search', [domain], {
      order: 'name desc, id',
      limit: 3,
      offset: 1,
    });
    const expected = await queryTenantDb<{ id: number }>(
      cfg,
      tenant.database,
      `SELECT id FROM res_partner WHERE customer_rank != 0 AND name ILIKE '%a%' AND (city NOT IN ('Berlin', 'Hamburg') OR city IS NULL) ORDER BY name DESC, id LIMIT 3 OFFSET 1`,
    );
    expect(ids).toEqual(expected.map((e) => e.id));
    const count = await api.executeKw<number>('res.partner', 'search_count', [domain]);
    const [all] = await queryTenantDb<{ n: number }>(
      cfg,
      tenant.database,
      `SELECT count(*)::int AS n FROM res_partner WHERE customer_rank != 0 AND name ILIKE '%a%' AND (city NOT IN ('Berlin', 'Hamburg') OR city IS NULL)`,
    );
    expect(count).toBe(all!.n);
  });

  it('treats values as data, never as SQL', async () => {
    const ids = await api.executeKw<number[]>('res.partner', 'search', [[['name', '=', "x' OR '1'='1"]]]);
    expect(ids).toEqual([]);
  });

  it('follows many2one paths in domains', async () => {
    const count = await api.executeKw<number>('account.move.line', 'search_count', [
      [['account_id.account_type', '=', 'asset_cash']],
    ]);
    const [row] = await queryTenantDb<{ n: number }>(
      cfg,
      tenant.database,
      `SELECT count(*)::int AS n FROM account_move_line l JOIN account_account a ON a.id = l.account_id WHERE a.account_type = 'asset_cash'`,
    );
    expect(count).toBe(row!.n);
  });

  it('read returns the records in the order asked, and a missing id is a fault', async () => {
    const records = await api.executeKw<{ id: number; display_name: string }[]>('account.journal', 'read', [[3, 1]], {
      fields: ['display_name'],
    });
    expect(records).toEqual([
      { id: 3, display_name: 'Bank' },
      { id: 1, display_name: 'Customer Invoices' },
    ]);
    const err = await fault(api.executeKw('account.journal', 'read', [[999]], { fields: ['name'] }));
    expect(err.code).toBe(2);
    expect(err.message).toContain('Record does not exist or has been deleted');
  });

  it('read_group by month sums amounts as the database does', async () => {
    const groups = await api.executeKw<Record<string, unknown>[]>(
      'account.move',
      'read_group',
      [
        [
          ['move_type', '=', 'out_invoice'],
          ['state', '=', 'posted'],
        ],
        ['amount_total:sum'],
        ['invoice_date:month'],
      ],
      { lazy: false },
    );
    const expected = await queryTenantDb<{ month: string; total: string; n: number }>(
      cfg,
      tenant.database,
      `SELECT to_char(date_trunc('month', invoice_date), 'YYYY-MM-DD') AS month, sum(amount_total) AS total, count(*)::int AS n
         FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' GROUP BY 1 ORDER BY 1`,
    );
    expect(groups).toHaveLength(expected.length);
    groups.forEach((g, i) => {
      const range = (g.__range as Record<string, { from: string }>)['invoice_date:month']!;
      expect(range.from).toBe(expected[i]!.month);
      expect(g.amount_total).toBeCloseTo(Number(expected[i]!.total), 2);
      expect(g.__count).toBe(expected[i]!.n);
      expect(g['invoice_date:month']).toMatch(/^[A-Z][a-z]+ \d{4}$/); // "November 2026", as Odoo labels months
    });
  });

  it('read_group by a many2one gives [id, name] groups', async () => {
    const groups = await api.executeKw<Record<string, unknown>[]>('account.move', 'read_group', [
      [],
      ['amount_total'],
      ['journal_id'],
    ]);
    expect(groups.map((g) => g.journal_id)).toEqual(
      expect.arrayContaining([
        [1, 'Customer Invoices'],
        [3, 'Bank'],
      ]),
    );
    expect(groups[0]).toHaveProperty('journal_id_count'); // lazy grouping counts as <field>_count
  });

  it('fields_get describes the fields with their types and relations', async () => {
    const fields = await api.executeKw<Record<string, Record<string, unknown>>>('account.move', 'fields_get', [], {
      attributes: ['type', 'relation'],
    });
    expect(fields.partner_id).toEqual({ type: 'many2one', relation: 'res.partner' });
    expect(fields.payment_state).toEqual({ type: 'selection' });
  });

  it.each([
    ['write', [[1], { name: 'changed' }], 'modify'],
    ['create', [{ name: 'New partner' }], 'create'],
    ['unlink', [[1]], 'delete'],
  ])('refuses %s to the read-only API user with the AccessError fault', async (method, args, verb) => {
    const model = method === 'create' ? 'res.partner' : 'account.move';
    const err = await fault(api.executeKw(model, method, args));
    expect(err.code).toBe(4);
    expect(err.faultString).toContain(`You are not allowed to ${verb}`);
  });

  it('leaves the data unchanged after a refused write', async () => {
    const [before] = await queryTenantDb<{ name: string }>(
      cfg,
      tenant.database,
      'SELECT name FROM account_move WHERE id = 1',
    );
    await fault(api.executeKw('account.move', 'write', [[1], { name: 'changed' }]));
    const [after] = await queryTenantDb<{ name: string }>(
      cfg,
      tenant.database,
      'SELECT name FROM account_move WHERE id = 1',
    );
    expect(after).toEqual(before);
  });

  it('lets an ERP administrator write', async () => {
    const adminClient = await erpAdminClient('admin-password-for-this-test');
    const id = await adminClient.executeKw<number>('res.partner', 'create', [
      { name: 'Written by admin', city: 'Berlin' },
    ]);
    expect(await adminClient.executeKw('res.partner', 'write', [[id], { city: false }])).toBe(true);
    const [row] = await queryTenantDb<{ name: string; city: string | null }>(
      cfg,
      tenant.database,
      'SELECT name, city FROM res_partner WHERE id = $1',
      [id],
    );
    expect(row).toEqual({ name: 'Written by admin', city: null });
  });

  it("installs modules as Odoo's Apps screen does: an administrator only; update_list lists what the database lacks", async () => {
    const adminClient = await erpAdminClient('admin-password-for-modules');
    const mrp = await adminClient.executeKw<{ id: number; state: string }[]>(
      'ir.module.module',
      'search_read',
      [[['name', '=', 'mrp']]],
      { fields: ['state'] },
    );
    expect(mrp).toEqual([{ id: expect.any(Number), state: 'uninstalled' }]);
    // the platform's read-only API user cannot
    const refused = await fault(api.executeKw('ir.module.module', 'button_immediate_install', [[mrp[0]!.id]]));
    expect(refused.code).toBe(4);
    expect(await adminClient.executeKw('ir.module.module', 'button_immediate_install', [[mrp[0]!.id]])).toMatchObject({
      type: 'ir.actions.client',
      tag: 'reload',
    });
    expect(await queryTenantDb(cfg, tenant.database, `SELECT state FROM ir_module_module WHERE name = 'mrp'`)).toEqual([
      { state: 'installed' },
    ]);
    // a module the database does not list (an older template) comes back with update_list, not installed
    await queryTenantDb(cfg, tenant.database, `DELETE FROM ir_module_module WHERE name = 'website'`);
    expect(await adminClient.executeKw('ir.module.module', 'update_list', [])).toEqual([0, 1]);
    expect(
      await queryTenantDb(cfg, tenant.database, `SELECT state FROM ir_module_module WHERE name = 'website'`),
    ).toEqual([{ state: 'uninstalled' }]);
    // the buttons are ir.module.module's only
    expect(
      (await fault(adminClient.executeKw('res.partner', 'button_immediate_install', [[1]]))).faultString,
    ).toContain("does not exist on the model 'res.partner'");
  });

  it('creates bank statement lines as Odoo does: required fields, the journal company, each import id once, a vals_list all or nothing', async () => {
    const importer = createErpClient({
      baseUrl: erp.url,
      host: tenant.host,
      db: tenant.database,
      ...(await loadErpCredentials(pool, cfg.SECRETS_KEY, tenant.name, 'bank-import'))!,
    });
    const journal = (
      await importer.executeKw<number[]>('account.journal', 'search', [[['type', '=', 'bank']]], { limit: 1 })
    )[0]!;
    const line = (importId: string) => ({
      date: '2026-01-02',
      amount: 12.5,
      payment_ref: `line ${importId}`,
      journal_id: journal,
      unique_import_id: importId,
    });

    const missing = await fault(
      importer.executeKw('account.bank.statement.line', 'create', [[{ journal_id: journal, amount: 5 }]]),
    );
    expect(missing.code).toBe(2);
    expect(missing.faultString).toContain('a mandatory field is not set');
    expect(missing.faultString).toContain('Field: Date (date)');

    const [id] = await importer.executeKw<number[]>('account.bank.statement.line', 'create', [[line('merge-test:1')]]);
    const [row] = await queryTenantDb<{
      company_id: number;
      journal_company: number;
      is_reconciled: boolean;
      amount_residual: string;
    }>(
      cfg,
      tenant.database,
      'SELECT l.company_id, j.company_id AS journal_company, l.is_reconciled, l.amount_residual FROM account_bank_statement_line l JOIN account_journal j ON j.id = l.journal_id WHERE l.id = $1',
      [id],
    );
    expect({ ...row, amount_residual: Number(row!.amount_residual) }).toEqual({
      company_id: row!.journal_company,
      journal_company: row!.journal_company,
      is_reconciled: false,
      amount_residual: 12.5,
    });

    // the second line repeats an import id: Odoo's ValidationError, and the first line is not written either
    const dup = await fault(
      importer.executeKw('account.bank.statement.line', 'create', [[line('merge-test:2'), line('merge-test:1')]]),
    );
    expect(dup.code).toBe(2);
    expect(dup.faultString).toContain('A bank account transactions can be imported only once!');
    const written = await queryTenantDb<{ unique_import_id: string }>(
      cfg,
      tenant.database,
      "SELECT unique_import_id FROM account_bank_statement_line WHERE unique_import_id LIKE 'merge-test:%'",
    );
    expect(written).toEqual([{ unique_import_id: 'merge-test:1' }]);

    // the dashboards' API user may not
    expect((await fault(api.executeKw('account.bank.statement.line', 'create', [[line('merge-test:3')]]))).code).toBe(
      4,
    );
  });

  it.each([
    ['an unknown model', () => api.executeKw('no.such.model', 'search', [[]]), 2, "Object no.such.model doesn't exist"],
    [
      'an unknown method',
      () => api.executeKw('account.move', 'frobnicate', [[]]),
      1,
      "The method 'frobnicate' does not exist on the model 'account.move'",
    ],
    [
      'a private method',
      () => api.executeKw('account.move', '_compute_amount', [[]]),
      4,
      'Private methods (such as _compute_amount) cannot be called remotely.',
    ],
    [
      'an unknown field',
      () => api.executeKw('account.move', 'search_read', [[]], { fields: ['no_such_field'] }),
      1,
      "Invalid field 'no_such_field' on model 'account.move'",
    ],
    [
      'an unknown field in a domain',
      () => api.executeKw('account.move', 'search', [[['nope', '=', 1]]]),
      1,
      'Invalid field account.move.nope',
    ],
    ['an invalid operator', () => api.executeKw('account.move', 'search', [[['name', 'near', 1]]]), 1, 'Invalid leaf'],
    [
      'an unexpected keyword',
      () => api.executeKw('account.move', 'search', [[]], { bogus: 1 }),
      1,
      "search() got an unexpected keyword argument 'bogus'",
    ],
    [
      'formatted_read_group before 19',
      () => api.executeKw('account.move', 'formatted_read_group', [[], [], ['__count']]),
      1,
      "The method 'formatted_read_group' does not exist",
    ],
  ])('answers %s with the fault Odoo gives', async (_, call, code, message) => {
    const err = await fault(call());
    expect(err.code).toBe(code);
    expect(err.faultString).toContain(message);
  });

  it('answers a malformed value and a malformed request with fault 1, not a crash', async () => {
    const err = await fault(api.executeKw('account.move', 'search', [[['invoice_date', '>=', 'not-a-date']]]));
    expect(err.code).toBe(1);
    expect(err.faultString).toContain('invalid input syntax for type date');
    const res = await get('/xmlrpc/2/object', tenant.host, 'POST', '<methodCall><oops');
    expect(res.status).toBe(200);
    const parsed = await parseMethodResponse(res.body).catch((e: unknown) => e as XmlRpcFault);
    expect(parsed).toBeInstanceOf(XmlRpcFault);
    expect((parsed as XmlRpcFault).faultCode).toBe(1);
    expect((await get('/web/health', tenant.host)).status).toBe(200); // still serving
  });

  it('answers a wrong password with the AccessDenied fault', async () => {
    const uid = await api.authenticate();
    const err = await fault(
      rpc(tenant.host, '/xmlrpc/2/object', 'execute_kw', [
        tenant.database,
        uid,
        'wrong',
        'res.partner',
        'search',
        [[]],
      ]),
    );
    expect(err.code).toBe(3);
    expect(err.faultString).toBe('Access Denied');
  });
});

describe('ERP versions', () => {
  it("the platform reads 19's version from /json/version, never XML-RPC (deprecated on 19), and 18's over XML-RPC", async () => {
    const t19 = await bed.provision({ tier: 'starter', version: '19' });
    const xmlRpcOf = (host: string) => erp.requests(host)['/xmlrpc/2/common'] ?? 0;
    const before19 = xmlRpcOf(t19.host);
    expect(await erpMajorVersion(erp.url, t19.host)).toBe(19);
    expect(xmlRpcOf(t19.host)).toBe(before19);
    expect(JSON.parse((await get('/json/version', t19.host)).body)).toEqual({
      version_info: [19, 0, 0, 'final', 0, ''],
      version: '19.0',
    });

    expect((await get('/json/version', tenant.host)).status).toBe(404);
    const before18 = xmlRpcOf(tenant.host);
    expect(await erpMajorVersion(erp.url, tenant.host)).toBe(18);
    expect(xmlRpcOf(tenant.host)).toBe(before18 + 1);
  });

  it('19 renames res.users.groups_id to group_ids and serves formatted_read_group', async () => {
    const t19 = await bed.provision({ tier: 'starter', version: '19' });
    const c19 = createErpClient({
      baseUrl: erp.url,
      host: t19.host,
      db: t19.database,
      ...(await loadErpCredentials(pool, cfg.SECRETS_KEY, t19.name))!,
    });
    const users19 = await c19.executeKw<Record<string, unknown>>('res.users', 'fields_get', [], {
      attributes: ['type'],
    });
    const users18 = await api.executeKw<Record<string, unknown>>('res.users', 'fields_get', [], {
      attributes: ['type'],
    });
    expect(users19).toHaveProperty('group_ids');
    expect(users19).not.toHaveProperty('groups_id');
    expect(users18).toHaveProperty('groups_id');

    const groups = await c19.executeKw<Record<string, unknown>[]>('account.move', 'formatted_read_group', [
      [['move_type', '=', 'out_invoice']],
      ['invoice_date:month'],
      ['amount_total:sum', '__count'],
    ]);
    const expected = await queryTenantDb<{ month: string; total: string }>(
      cfg,
      t19.database,
      `SELECT to_char(date_trunc('month', invoice_date), 'YYYY-MM-DD') AS month, sum(amount_total) AS total FROM account_move WHERE move_type = 'out_invoice' GROUP BY 1 ORDER BY 1`,
    );
    expect(groups.map((g) => (g['invoice_date:month'] as [string, string])[0])).toEqual(expected.map((e) => e.month));
    expect(groups[0]!['amount_total:sum']).toBeCloseTo(Number(expected[0]!.total), 2);
  });
});

describe('the client', () => {
  it('says in its own terms why the ERP could not be asked: down, or no route for the host', async () => {
    const down = createErpClient({
      baseUrl: 'http://127.0.0.1:1',
      host: tenant.host,
      db: tenant.database,
      ...credentials,
    });
    await expect(down.authenticate()).rejects.toMatchObject({ name: 'ErpUnreachable', reason: 'down' });
    const unrouted = createErpClient({ baseUrl: erp.url, host: 'nobody.erp.plana.test', db: 'x', ...credentials });
    const err = await unrouted.authenticate().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ErpUnreachable);
    expect((err as ErpUnreachable).reason).toBe('no-route');
  });
});
