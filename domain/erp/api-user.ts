/**
 * The tenant's dedicated ERP API user (specification §5.5): the platform reads a tenant's ERP as
 * this user only, never with a human's credentials. Login `api@<tenant hostname>`, a long random
 * password from the CSPRNG, minimal rights: internal user + accounting read-only, linked to the
 * tenant's companies, so every write is refused and every figure is visible.
 *
 * The user is made through Odoo's own models in one web session (JSON-RPC) as the tenant
 * database's `admin`, so the admin's password is checked once, not on every call (never by SQL
 * into Odoo's tables: modules add required columns and defaults that only the ORM knows), with the groups looked up by external id in `ir.model.data` (group ids differ between
 * databases). The admin's password in a template is ERP_ADMIN_PASSWORD; on first use in a tenant
 * the platform replaces it with one derived from SECRETS_KEY and the database name (HKDF), so no
 * two tenants share an admin password and nothing more has to be stored. The API user's password
 * is sealed with SECRETS_KEY in the platform table `tenant_erp_credentials`.
 *
 * A second user, `bank-import@<tenant hostname>` (domain/banking/erp-import.ts), is made the same
 * way with internal user + accounting bookkeeper (it creates bank statement lines); its password is
 * sealed in `tenant_erp_bank_import_credentials`.
 *
 * On Odoo 19+ the API user also gets an Odoo API key (JSON-2, domain/erp/json2.ts, takes keys only;
 * XML-RPC takes one in the password slot from 17 on): see `ensureErpApiKey`.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { open, seal } from '../../lib/secret-box.js';
import { ErpFault, createErpClient, openErpSession, xmlRpcCall, type ErpClient, type ErpSession } from './client.js';
import { createJson2Client } from './json2.js';

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
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretsKey, 'base64'), 'plana-erp-admin', database, 32)).toString(
    'base64url',
  );
}

const databaseMissing = (err: unknown) =>
  err instanceof ErpFault && /database "[^"]*" does not exist/.test(err.faultString);

/**
 * A web session as the tenant's `admin`: with its own password, or (a fresh clone) with the
 * template's; `templatePassword` then says the admin's password is still the template's. A tenant
 * the platform has made no user for yet is most likely a fresh clone: its template password is
 * tried first (each refused password costs the ERP a full password hash).
 */
export async function adminSession(
  deps: ErpApiUserDeps,
  database: string,
  opts: { freshClone?: boolean; timeoutMs?: number } = {},
): Promise<{ session: ErpSession; templatePassword: boolean }> {
  const attempts = [
    { password: tenantAdminPassword(deps.secretsKey, database), templatePassword: false },
    { password: deps.erpAdminPassword, templatePassword: true },
  ];
  if (opts.freshClone) attempts.reverse();
  for (const { password, templatePassword } of attempts) {
    try {
      return {
        session: await openErpSession({
          baseUrl: deps.erpUrl,
          host: database,
          db: database,
          login: 'admin',
          password,
          timeoutMs: opts.timeoutMs,
        }),
        templatePassword,
      };
    } catch (err) {
      if (!(err instanceof ErpFault && err.code === 3)) throw err;
    }
  }
  throw new Error(`the ERP admin of ${database} refused both the tenant's and the template's password`);
}

/** The ERP's major version (`version` on /xmlrpc/2/common: no login, no password check). */
async function erpMajorVersion(erpUrl: string, host: string): Promise<number> {
  const info = (await xmlRpcCall({ baseUrl: erpUrl, host }, '/xmlrpc/2/common', 'version', [])) as {
    server_version_info?: unknown[];
  };
  return Number(info.server_version_info?.[0] ?? 18);
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

/** The ids of the groups named by external id, in one read of `ir.model.data`. */
async function groupIds(admin: ErpSession, database: string, xmlids: readonly string[]): Promise<number[]> {
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

/** The first ERP version whose API user reads with an API key (JSON-2). 17 and 18 can make keys too (`force`). */
export const API_KEY_MIN_VERSION = 19;
/** The key's lifetime, in days (one of Odoo's durations), and when it is renewed. */
export const API_KEY_DAYS = 90;
export const API_KEY_RENEW_DAYS = 30;
/** The group that lets the API user make keys of API_KEY_DAYS (Odoo's default maximum is 1 day). */
export const API_KEY_GROUP_NAME = 'Platform API keys';

export type ApiKeyOutcome = 'not-used' | 'valid' | 'created' | 'renewed';

/**
 * The API user's Odoo API key, as Odoo makes one (base/models/res_users.py): in a web session as
 * the API user (its password), `res.users.apikeys.description` {name, duration} (saved with
 * `web_save` as the web client does: its `create` takes ids first over RPC) then `make_key`,
 * which is `@check_identity` and answers a `res.users.identitycheck` wizard: `write` {password} on
 * it and `run_check` answers the action whose `context.default_key` is the key, shown once. A
 * non-admin may only make keys up to the largest `api_key_duration` of its groups (1 day without),
 * so the tenant's admin first puts the API user in the group `Platform API keys` (90 days), made
 * through Odoo's models. The key is sealed in `tenant_erp_credentials` with its expiry and is never
 * logged nor returned. Renewal: when fewer than API_KEY_RENEW_DAYS remain, or when the stored key no
 * longer works (a re-cloned database), the next ensure (each reconcile of the tenant) makes a new
 * one; the old key stays valid until its own expiry, so readers holding it are not cut off.
 */
export async function ensureErpApiKey(
  deps: ErpApiUserDeps,
  opts: { tenant: string; database: string; force?: boolean; now?: Date },
): Promise<{ outcome: ApiKeyOutcome; expiresAt?: Date }> {
  const version = await erpMajorVersion(deps.erpUrl, opts.database);
  if (version < API_KEY_MIN_VERSION && !opts.force) return { outcome: 'not-used' };
  return withTransaction(deps.platform, async (platform) => {
    await platform.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`api-key:${opts.tenant}`]);
    const stored = await platform.query<{
      login: string;
      password_encrypted: string;
      api_key_encrypted: string | null;
      api_key_expires_at: Date | null;
    }>(
      'SELECT login, password_encrypted, api_key_encrypted, api_key_expires_at FROM tenant_erp_credentials WHERE tenant = $1',
      [opts.tenant],
    );
    const row = stored.rows[0];
    if (!row) throw new Error(`tenant ${opts.tenant} has no ERP API user yet`);
    const now = opts.now ?? new Date();
    if (
      row.api_key_encrypted &&
      row.api_key_expires_at &&
      row.api_key_expires_at.getTime() - now.getTime() > API_KEY_RENEW_DAYS * 86_400_000
    ) {
      const apiKey = open(row.api_key_encrypted, deps.secretsKey);
      const works =
        version >= 19
          ? authenticates(
              createJson2Client({
                baseUrl: deps.erpUrl,
                host: opts.database,
                db: opts.database,
                login: row.login,
                apiKey,
              }),
            )
          : authenticates(
              createErpClient({
                baseUrl: deps.erpUrl,
                host: opts.database,
                db: opts.database,
                login: row.login,
                password: apiKey,
              }),
            );
      if (await works) return { outcome: 'valid' as const, expiresAt: row.api_key_expires_at };
    }
    const password = open(row.password_encrypted, deps.secretsKey);

    // the tenant's admin lets the API user make keys of API_KEY_DAYS
    const { session: admin } = await adminSession(deps, opts.database);
    const groupsField = version >= 19 ? 'group_ids' : 'groups_id';
    const [groups, users] = await Promise.all([
      admin.callKw<{ id: number; api_key_duration: number | false }[]>(
        'res.groups',
        'search_read',
        [[['name', '=', API_KEY_GROUP_NAME]]],
        { fields: ['api_key_duration'] },
      ),
      admin.callKw<number[]>('res.users', 'search', [[['login', '=', row.login]]]),
    ]);
    if (!users[0]) throw new Error(`the ERP API user ${row.login} of ${opts.database} does not exist`);
    let groupId = groups[0]?.id;
    if (groupId === undefined)
      groupId = await admin.callKw<number>('res.groups', 'create', [
        { name: API_KEY_GROUP_NAME, api_key_duration: API_KEY_DAYS },
      ]);
    else if (groups[0]!.api_key_duration !== API_KEY_DAYS)
      await admin.callKw('res.groups', 'write', [[groupId], { api_key_duration: API_KEY_DAYS }]);
    await admin.callKw('res.users', 'write', [[users[0]], { [groupsField]: [[4, groupId]] }]);

    // the API user makes its own key, confirming its password (Odoo's identity check)
    const session = await openErpSession({
      baseUrl: deps.erpUrl,
      host: opts.database,
      db: opts.database,
      login: row.login,
      password,
    });
    // web_save, as Odoo's web client: the wizard's `create` is not a model method over RPC (real Odoo 18)
    const [saved] = await session.callKw<{ id: number }[]>('res.users.apikeys.description', 'web_save', [
      [],
      { name: `Plana platform (${now.toISOString().slice(0, 10)})`, duration: String(API_KEY_DAYS) },
      {},
    ]);
    const description = saved!.id;
    let action = await session.callKw<{ res_model?: string; res_id?: number; context?: { default_key?: unknown } }>(
      'res.users.apikeys.description',
      'make_key',
      [[description]],
    );
    if (action.res_model === 'res.users.identitycheck' && typeof action.res_id === 'number') {
      await session.callKw('res.users.identitycheck', 'write', [[action.res_id], { password }]);
      action = await session.callKw('res.users.identitycheck', 'run_check', [[action.res_id]]);
    }
    const apiKey = action.context?.default_key;
    if (typeof apiKey !== 'string' || !apiKey)
      throw new Error(`the ERP of ${opts.database} made no API key (answered ${action.res_model ?? 'no action'})`);
    // Odoo's expiry: today (the ERP's date) + the duration; a day early here keeps the renewal safe
    const expiresAt = new Date(
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + (API_KEY_DAYS - 1) * 86_400_000,
    );
    await platform.query(
      'UPDATE tenant_erp_credentials SET api_key_encrypted = $2, api_key_expires_at = $3 WHERE tenant = $1',
      [opts.tenant, seal(apiKey, deps.secretsKey), expiresAt],
    );
    return { outcome: row.api_key_encrypted ? ('renewed' as const) : ('created' as const), expiresAt };
  });
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
    const apiUser = (password: string) =>
      createErpClient({ baseUrl: deps.erpUrl, host: opts.database, db: opts.database, login, password });

    try {
      if (known && (await authenticates(apiUser(known)))) return { login, created: false }; // working already: leave it alone

      // one web session as the tenant's admin: the password is checked once, not on every call
      const { session: admin, templatePassword } = await adminSession(deps, opts.database, {
        freshClone: !known && role === API_USER,
      });
      const version = await erpMajorVersion(deps.erpUrl, opts.database);
      const groupsField = version >= 19 ? 'group_ids' : 'groups_id';
      const [groups, companies, existing] = await Promise.all([
        groupIds(admin, opts.database, role.groups),
        admin.callKw<number[]>('res.company', 'search', [[]], { order: 'id' }),
        admin.callKw<{ id: number }[]>('res.users', 'search_read', [[['login', '=', login]]], {
          fields: ['id'],
          context: { active_test: false },
        }),
      ]);
      if (!companies.length) throw new Error(`the ERP admin of ${opts.database} sees no company`);
      // keep a stored password when the user is merely missing (e.g. the database was re-cloned)
      const password = known ?? randomBytes(32).toString('base64url');
      const rights = {
        password,
        active: true,
        company_id: companies[0],
        company_ids: [[6, 0, companies]],
        [groupsField]: [[6, 0, groups]],
      };
      if (existing[0]) await admin.callKw('res.users', 'write', [[existing[0].id], rights]);
      else await admin.callKw('res.users', 'create', [{ name: role.name, login, ...rights }]);
      // last: a new password of the admin itself ends its session. No two tenants share an admin password.
      if (templatePassword)
        await admin.callKw('res.users', 'write', [
          [admin.uid],
          { password: tenantAdminPassword(deps.secretsKey, opts.database) },
        ]);
      // (whether the ERP accepts the user is what the readiness probe checks next, by authenticating as it)

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
