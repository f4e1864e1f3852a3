/**
 * The tenant's dedicated ERP API user (specification §5.5): the platform reads a tenant's ERP as
 * this user only, never with a human's credentials. Login `api@<tenant hostname>`, a long random
 * password from the CSPRNG, minimal rights: internal user + accounting read-only, linked to the
 * tenant's companies, so every write is refused and every figure is visible.
 *
 * The user is made through Odoo's own models over XML-RPC, as the tenant database's `admin`
 * (never by SQL into Odoo's tables: modules add required columns and defaults that only the ORM
 * knows), with the groups looked up by external id in `ir.model.data` (group ids differ between
 * databases). The admin's password in a template is ERP_ADMIN_PASSWORD; on first use in a tenant
 * the platform replaces it with one derived from SECRETS_KEY and the database name (HKDF), so no
 * two tenants share an admin password and nothing more has to be stored. The API user's password
 * is sealed with SECRETS_KEY in the platform table `tenant_erp_credentials`.
 *
 * A second user, `bank-import@<tenant hostname>` (domain/banking/erp-import.ts), is made the same
 * way with internal user + accounting bookkeeper (it creates bank statement lines); its password is
 * sealed in `tenant_erp_bank_import_credentials`.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { open, seal } from '../../lib/secret-box.js';
import { ErpFault, createErpClient, type ErpClient } from './client.js';

/** External ids of the API user's groups: internal user, accounting read-only. */
export const API_USER_GROUPS = ['base.group_user', 'account.group_account_readonly'] as const;
/** External ids of the bank import user's groups: internal user, accounting bookkeeper. */
export const BANK_IMPORT_USER_GROUPS = ['base.group_user', 'account.group_account_user'] as const;

export const erpApiLogin = (database: string) => `api@${database}`;
export const erpBankImportLogin = (database: string) => `bank-import@${database}`;

/** A dedicated ERP user of the platform: where its credentials are kept, its login, its groups. */
interface ErpUserRole {
  table: 'tenant_erp_credentials' | 'tenant_erp_bank_import_credentials';
  login: (database: string) => string;
  /** External ids of its res.groups (looked up in `ir.model.data`). */
  groups: readonly string[];
  name: string;
}

/** The dashboards' reader: Internal User, Accounting / Read-only. */
const API_USER: ErpUserRole = { table: 'tenant_erp_credentials', login: erpApiLogin, groups: API_USER_GROUPS, name: 'Platform API' };
/** The bank statement importer: Internal User, Accounting / Bookkeeper (creates bank statement lines). */
const BANK_IMPORT_USER: ErpUserRole = { table: 'tenant_erp_bank_import_credentials', login: erpBankImportLogin, groups: BANK_IMPORT_USER_GROUPS, name: 'Platform bank import' };

export interface ErpApiUserDeps {
  platform: pg.Pool;
  /** The ERP entry point; the tenant is chosen by the Host header (its database name). */
  erpUrl: string;
  secretsKey: string;
  /** The `admin` password of the template databases (ERP_ADMIN_PASSWORD). */
  erpAdminPassword: string;
}

/** The deps from the configuration; `erpUrl` defaults to ERP_URL. */
export const erpApiUserDeps = (config: Config, platform: pg.Pool, erpUrl = config.ERP_URL): ErpApiUserDeps => ({
  platform,
  erpUrl,
  secretsKey: config.SECRETS_KEY,
  erpAdminPassword: config.ERP_ADMIN_PASSWORD,
});

/** The tenant database's own admin password, derived from SECRETS_KEY (never stored). */
export function tenantAdminPassword(secretsKey: string, database: string): string {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretsKey, 'base64'), 'plana-erp-admin', database, 32)).toString('base64url');
}

const databaseMissing = (err: unknown) => err instanceof ErpFault && /database "[^"]*" does not exist/.test(err.faultString);

/**
 * An XML-RPC session as the tenant's `admin`: with its own password, or (a fresh clone) with the
 * template's, which is then replaced by the tenant's own.
 */
export async function adminSession(deps: ErpApiUserDeps, database: string, timeoutMs?: number): Promise<ErpClient> {
  const own = tenantAdminPassword(deps.secretsKey, database);
  const client = (password: string) => createErpClient({ baseUrl: deps.erpUrl, host: database, db: database, login: 'admin', password, timeoutMs });
  const tenantAdmin = client(own);
  if (await authenticates(tenantAdmin)) return tenantAdmin;
  const templateAdmin = client(deps.erpAdminPassword);
  if (!(await authenticates(templateAdmin))) throw new Error(`the ERP admin of ${database} refused both the tenant's and the template's password`);
  const uid = await templateAdmin.authenticate();
  await templateAdmin.executeKw('res.users', 'write', [[uid], { password: own }]);
  return tenantAdmin;
}

async function authenticates(client: ErpClient): Promise<boolean> {
  try {
    await client.authenticate();
    return true;
  } catch (err) {
    if (err instanceof ErpFault && err.code === 3) return false; // False or Access Denied
    throw err;
  }
}

async function groupIds(admin: ErpClient, database: string, xmlids: readonly string[]): Promise<number[]> {
  return Promise.all(
    xmlids.map(async (xmlid) => {
      const [module, name] = xmlid.split('.');
      const rows = await admin.executeKw<{ res_id: number }[]>('ir.model.data', 'search_read', [[['module', '=', module], ['name', '=', name], ['model', '=', 'res.groups']]], {
        fields: ['res_id'],
        limit: 1,
      });
      if (!rows[0]) throw new Error(`group ${xmlid} does not exist in ${database} (is the accounting module installed?)`);
      return rows[0].res_id;
    }),
  );
}

export function ensureErpApiUser(deps: ErpApiUserDeps, opts: { tenant: string; database: string }) {
  return ensureErpUser(deps, opts, API_USER);
}

/** The tenant's bank import user (domain/banking/erp-import.ts), created on first use like the API user. */
export function ensureErpBankImportUser(deps: ErpApiUserDeps, opts: { tenant: string; database: string }) {
  return ensureErpUser(deps, opts, BANK_IMPORT_USER);
}

async function ensureErpUser(deps: ErpApiUserDeps, opts: { tenant: string; database: string }, role: ErpUserRole): Promise<{ login: string; created: boolean }> {
  return withTransaction(deps.platform, async (platform) => {
    // one caller per tenant at a time; the second sees what the first stored
    await platform.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${role.table}:${opts.tenant}`]);
    const stored = await platform.query<{ login: string; password_encrypted: string }>(
      `SELECT login, password_encrypted FROM ${role.table} WHERE tenant = $1`,
      [opts.tenant],
    );
    const login = stored.rows[0]?.login ?? role.login(opts.database);
    const known = stored.rows[0] ? open(stored.rows[0].password_encrypted, deps.secretsKey) : undefined;
    const apiUser = (password: string) => createErpClient({ baseUrl: deps.erpUrl, host: opts.database, db: opts.database, login, password });

    try {
      if (known && (await authenticates(apiUser(known)))) return { login, created: false }; // working already: leave it alone

      const admin = await adminSession(deps, opts.database);
      const version = Number(((await admin.version()).server_version_info as unknown[] | undefined)?.[0] ?? 18);
      const groupsField = version >= 19 ? 'group_ids' : 'groups_id';
      const [groups, companies, existing] = await Promise.all([
        groupIds(admin, opts.database, role.groups),
        admin.executeKw<number[]>('res.company', 'search', [[]], { order: 'id' }),
        admin.executeKw<{ id: number }[]>('res.users', 'search_read', [[['login', '=', login]]], { fields: ['id'], context: { active_test: false } }),
      ]);
      if (!companies.length) throw new Error(`the ERP admin of ${opts.database} sees no company`);
      // keep a stored password when the user is merely missing (e.g. the database was re-cloned)
      const password = known ?? randomBytes(32).toString('base64url');
      const rights = { password, active: true, company_id: companies[0], company_ids: [[6, 0, companies]], [groupsField]: [[6, 0, groups]] };
      if (existing[0]) await admin.executeKw('res.users', 'write', [[existing[0].id], rights]);
      else await admin.executeKw('res.users', 'create', [{ name: role.name, login, ...rights }]);
      if (!(await authenticates(apiUser(password)))) throw new Error(`the ERP of ${opts.database} refuses the user ${login} just set up`);

      if (!known) {
        await platform.query(
          `INSERT INTO ${role.table} (tenant, login, password_encrypted) VALUES ($1, $2, $3)
           ON CONFLICT (tenant) DO UPDATE SET login = EXCLUDED.login, password_encrypted = EXCLUDED.password_encrypted`,
          [opts.tenant, login, seal(password, deps.secretsKey)],
        );
      }
      return { login, created: !existing[0] };
    } catch (err) {
      if (databaseMissing(err)) throw new Error(`tenant database ${opts.database} does not exist`);
      throw err;
    }
  });
}

export async function loadErpCredentials(
  platform: pg.Pool,
  secretsKey: string,
  tenant: string,
  role: 'api' | 'bank-import' = 'api',
): Promise<{ login: string; password: string } | null> {
  const table = role === 'api' ? API_USER.table : BANK_IMPORT_USER.table;
  const res = await platform.query<{ login: string; password_encrypted: string }>(`SELECT login, password_encrypted FROM ${table} WHERE tenant = $1`, [tenant]);
  const row = res.rows[0];
  return row ? { login: row.login, password: open(row.password_encrypted, secretsKey) } : null;
}
