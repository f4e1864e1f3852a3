/**
 * The tenant's dedicated ERP API user (specification §5.5): the platform reads a tenant's ERP as
 * this user only, never with a human's credentials. Login `api@<tenant hostname>`, a long random
 * password from the CSPRNG, minimal rights: internal user + accounting read-only, linked to the
 * tenant's companies, so every write is refused and every figure is visible.
 *
 * The user is made through Odoo's own models in one web session (JSON-RPC) as the tenant
 * database's `admin` (admin-session.ts), so the admin's password is checked once, not on every call
 * (never by SQL into Odoo's tables: modules add required columns and defaults that only the ORM
 * knows), with the groups looked up by external id in `ir.model.data` (group ids differ between
 * databases). The API user's password is sealed with SECRETS_KEY in the platform table
 * `tenant_erp_credentials`.
 *
 * A second user, `bank-import@<tenant hostname>` (domain/banking/erp-import.ts), is made the same
 * way with internal user + accounting bookkeeper (it creates bank statement lines); its password is
 * sealed in `tenant_erp_bank_import_credentials`.
 *
 * On Odoo 19+ the API user also gets an Odoo API key (JSON-2, domain/erp/client.ts, takes keys only;
 * XML-RPC takes one in the password slot from 17 on): api-key.ts.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { open, seal } from '../../lib/secret-box.js';
import {
  adminSession,
  authenticates,
  erpMajorVersion,
  groupsField,
  tenantAdminPassword,
  type ErpApiUserDeps,
} from './admin-session.js';
import { API_KEY_MIN_VERSION, ensureErpApiKey } from './api-key.js';
import {
  ErpFault,
  createErpClient,
  createJson2Client,
  openErpSession,
  type ErpClient,
  type ErpSession,
} from './client.js';

export { adminSession, erpApiUserDeps, tenantAdminPassword, type ErpApiUserDeps } from './admin-session.js';
export {
  API_KEY_DAYS,
  API_KEY_GROUP_NAME,
  API_KEY_MIN_VERSION,
  API_KEY_RENEW_DAYS,
  ensureErpApiKey,
  type ApiKeyOutcome,
} from './api-key.js';

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
const API_USER: ErpUserRole = {
  table: 'tenant_erp_credentials',
  login: erpApiLogin,
  groups: API_USER_GROUPS,
  name: 'Platform API',
};
/** The bank statement importer: Internal User, Accounting / Bookkeeper (creates bank statement lines). */
const BANK_IMPORT_USER: ErpUserRole = {
  table: 'tenant_erp_bank_import_credentials',
  login: erpBankImportLogin,
  groups: BANK_IMPORT_USER_GROUPS,
  name: 'Platform bank import',
};

const databaseMissing = (err: unknown) =>
  err instanceof ErpFault && /database "[^"]*" does not exist/.test(err.faultString);

/** The ids of the groups named by external id, in one read of `ir.model.data`. */
export async function groupIds(admin: ErpSession, database: string, xmlids: readonly string[]): Promise<number[]> {
  const split = xmlids.map((x) => x.split('.') as [string, string]);
  const rows = await admin.callKw<{ module: string; name: string; res_id: number }[]>(
    'ir.model.data',
    'search_read',
    [
      [
        ['model', '=', 'res.groups'],
        ['module', 'in', [...new Set(split.map(([m]) => m))]],
        ['name', 'in', split.map(([, n]) => n)],
      ],
    ],
    { fields: ['module', 'name', 'res_id'] },
  );
  return split.map(([module, name]) => {
    const row = rows.find((r) => r.module === module && r.name === name);
    if (!row)
      throw new Error(`group ${module}.${name} does not exist in ${database} (is the accounting module installed?)`);
    return row.res_id;
  });
}

/** The API user, and on Odoo 19+ its API key (made, or renewed when it nears its expiry). */
export async function ensureErpApiUser(deps: ErpApiUserDeps, opts: { tenant: string; database: string }) {
  const user = await ensureErpUser(deps, opts, API_USER);
  const key = await ensureErpApiKey(deps, opts);
  return { ...user, apiKey: key.outcome };
}

/** The tenant's bank import user (domain/banking/erp-import.ts), created on first use like the API user. */
export function ensureErpBankImportUser(deps: ErpApiUserDeps, opts: { tenant: string; database: string }) {
  return ensureErpUser(deps, opts, BANK_IMPORT_USER);
}

async function ensureErpUser(
  deps: ErpApiUserDeps,
  opts: { tenant: string; database: string },
  role: ErpUserRole,
): Promise<{ login: string; created: boolean }> {
  return withTransaction(deps.platform, async (platform) => {
    // one caller per tenant at a time; the second sees what the first stored
    await platform.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${role.table}:${opts.tenant}`]);
    const stored = await platform.query<{ login: string; password_encrypted: string }>(
      `SELECT login, password_encrypted FROM ${role.table} WHERE tenant = $1`,
      [opts.tenant],
    );
    const login = stored.rows[0]?.login ?? role.login(opts.database);
    const known = stored.rows[0] ? open(stored.rows[0].password_encrypted, deps.secretsKey) : undefined;

    try {
      if (known && (await logsIn(deps, opts.database, { login, password: known }))) return { login, created: false }; // working already: leave it alone
      const { password, created } = await writeErpUser(deps, opts.database, role, { login, known });
      if (!known) {
        await platform.query(
          `INSERT INTO ${role.table} (tenant, login, password_encrypted) VALUES ($1, $2, $3)
           ON CONFLICT (tenant) DO UPDATE SET login = EXCLUDED.login, password_encrypted = EXCLUDED.password_encrypted`,
          [opts.tenant, login, seal(password, deps.secretsKey)],
        );
      }
      return { login, created };
    } catch (err) {
      if (databaseMissing(err)) throw new Error(`tenant database ${opts.database} does not exist`);
      throw err;
    }
  });
}

/**
 * Whether the user's password logs in: over XML-RPC on Odoo 17 and 18, in a web session on 19+
 * (which deprecates XML-RPC). Either is one password check on the ERP's side.
 */
async function logsIn(deps: ErpApiUserDeps, database: string, user: { login: string; password: string }) {
  const target = { baseUrl: deps.erpUrl, host: database, db: database, ...user };
  if ((await erpMajorVersion(deps.erpUrl, database)) < 19) return authenticates(createErpClient(target));
  return openErpSession(target).then(
    () => true,
    (err: unknown) => {
      if (err instanceof ErpFault && err.code === 3) return false;
      throw err;
    },
  );
}

/**
 * Creates the role's user in the tenant's ERP, or puts back its password, groups and companies; a
 * template admin password is replaced by the tenant's own. Answers the user's password (`known`
 * kept, else a new one) and whether the user was created.
 */
async function writeErpUser(
  deps: ErpApiUserDeps,
  database: string,
  role: ErpUserRole,
  user: { login: string; known: string | undefined },
): Promise<{ password: string; created: boolean }> {
  // one web session as the tenant's admin: the password is checked once, not on every call
  const { session: admin, templatePassword } = await adminSession(deps, database, {
    freshClone: !user.known && role === API_USER,
  });
  const version = await erpMajorVersion(deps.erpUrl, database);
  const [groups, companies, existing] = await Promise.all([
    groupIds(admin, database, role.groups),
    admin.callKw<number[]>('res.company', 'search', [[]], { order: 'id' }),
    admin.callKw<{ id: number }[]>('res.users', 'search_read', [[['login', '=', user.login]]], {
      fields: ['id'],
      context: { active_test: false },
    }),
  ]);
  if (!companies.length) throw new Error(`the ERP admin of ${database} sees no company`);
  // keep a stored password when the user is merely missing (e.g. the database was re-cloned)
  const password = user.known ?? randomBytes(32).toString('base64url');
  const rights = {
    password,
    active: true,
    company_id: companies[0],
    company_ids: [[6, 0, companies]],
    [groupsField(version)]: [[6, 0, groups]],
  };
  if (existing[0]) await admin.callKw('res.users', 'write', [[existing[0].id], rights]);
  else await admin.callKw('res.users', 'create', [{ name: role.name, login: user.login, ...rights }]);
  // last: a new password of the admin itself ends its session. No two tenants share an admin password.
  if (templatePassword)
    await admin.callKw('res.users', 'write', [
      [admin.uid],
      { password: tenantAdminPassword(deps.secretsKey, database) },
    ]);
  // (whether the ERP accepts the user is what the readiness probe checks next, by authenticating as it)
  return { password, created: !existing[0] };
}

export async function loadErpCredentials(
  platform: pg.Pool,
  secretsKey: string,
  tenant: string,
  role: 'api' | 'bank-import' = 'api',
): Promise<{ login: string; password: string } | null> {
  const table = role === 'api' ? API_USER.table : BANK_IMPORT_USER.table;
  const res = await platform.query<{ login: string; password_encrypted: string }>(
    `SELECT login, password_encrypted FROM ${table} WHERE tenant = $1`,
    [tenant],
  );
  const row = res.rows[0];
  return row ? { login: row.login, password: open(row.password_encrypted, secretsKey) } : null;
}

/** The API user's credentials with its API key (null when none was made), for `erpClientFor`. */
export async function loadErpApiCredentials(
  platform: pg.Pool,
  secretsKey: string,
  tenant: string,
): Promise<{ login: string; password: string; apiKey: string | null; apiKeyExpiresAt: Date | null } | null> {
  const res = await platform.query<{
    login: string;
    password_encrypted: string;
    api_key_encrypted: string | null;
    api_key_expires_at: Date | null;
  }>(
    'SELECT login, password_encrypted, api_key_encrypted, api_key_expires_at FROM tenant_erp_credentials WHERE tenant = $1',
    [tenant],
  );
  const row = res.rows[0];
  if (!row) return null;
  return {
    login: row.login,
    password: open(row.password_encrypted, secretsKey),
    apiKey: row.api_key_encrypted ? open(row.api_key_encrypted, secretsKey) : null,
    apiKeyExpiresAt: row.api_key_expires_at,
  };
}

/**
 * The API user's client: JSON-2 with the API key on Odoo 19 and later (so a version after 19 keeps
 * working when XML-RPC goes), XML-RPC with the password before, or when no key was made yet.
 */
export function erpClientFor(
  target: { baseUrl: string; host: string; db: string; version: string | number; timeoutMs?: number },
  credentials: { login: string; password: string; apiKey?: string | null },
): ErpClient {
  const { baseUrl, host, db, timeoutMs } = target;
  if (Number(target.version) >= API_KEY_MIN_VERSION && credentials.apiKey)
    return createJson2Client({ baseUrl, host, db, login: credentials.login, apiKey: credentials.apiKey, timeoutMs });
  return createErpClient({ baseUrl, host, db, login: credentials.login, password: credentials.password, timeoutMs });
}

/** What identifies the stored API user credentials (never the password or key), per tenant. */
export interface ErpApiCredentialVersion {
  login: string;
  apiKeyExpiresAt: Date | null;
}

/** The stored API users of these tenants, in one query, without opening any secret. */
export async function erpApiCredentialVersions(
  platform: pg.Pool,
  tenants: string[],
): Promise<Map<string, ErpApiCredentialVersion>> {
  const res = await platform.query<{ tenant: string; login: string; api_key_expires_at: Date | null }>(
    'SELECT tenant, login, api_key_expires_at FROM tenant_erp_credentials WHERE tenant = ANY($1)',
    [tenants],
  );
  return new Map(res.rows.map((r) => [r.tenant, { login: r.login, apiKeyExpiresAt: r.api_key_expires_at }]));
}
