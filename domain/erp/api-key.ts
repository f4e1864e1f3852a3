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
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { open, seal } from '../../lib/secret-box.js';
import { adminSession, authenticates, erpMajorVersion, groupsField, type ErpApiUserDeps } from './admin-session.js';
import { createErpClient, createJson2Client, openErpSession } from './client.js';

/** The first ERP version whose API user reads with an API key (JSON-2). 18 can make keys too (`force`). */
export const API_KEY_MIN_VERSION = 19;
/** Odoo 17's keys never expire (no `duration`, no `api_key_duration`): no key is made there, even with `force`. */
export const API_KEY_EXPIRY_MIN_VERSION = 18;
/** The key's lifetime, in days (one of Odoo's durations), and when it is renewed. */
export const API_KEY_DAYS = 90;
export const API_KEY_RENEW_DAYS = 30;
/** The group that lets the API user make keys of API_KEY_DAYS (Odoo's default maximum is 1 day). */
export const API_KEY_GROUP_NAME = 'Platform API keys';

export type ApiKeyOutcome = 'not-used' | 'valid' | 'created' | 'renewed';

/** The API user's row in tenant_erp_credentials. */
interface StoredApiUser {
  login: string;
  password_encrypted: string;
  api_key_encrypted: string | null;
  api_key_expires_at: Date | null;
}

/** The API user's key on Odoo 19+ (or with `force` on 18): kept while it works and is far from expiry, else made anew. */
export async function ensureErpApiKey(
  deps: ErpApiUserDeps,
  opts: { tenant: string; database: string; force?: boolean; now?: Date },
): Promise<{ outcome: ApiKeyOutcome; expiresAt?: Date }> {
  const version = await erpMajorVersion(deps.erpUrl, opts.database);
  if (version < API_KEY_MIN_VERSION && (!opts.force || version < API_KEY_EXPIRY_MIN_VERSION))
    return { outcome: 'not-used' };
  return withTransaction(deps.platform, async (platform) => {
    await platform.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`api-key:${opts.tenant}`]);
    const row = await storedApiUser(platform, opts.tenant);
    const now = opts.now ?? new Date();
    const validUntil = await storedKeyValidUntil(deps, opts.database, version, row, now);
    if (validUntil) return { outcome: 'valid' as const, expiresAt: validUntil };
    const password = open(row.password_encrypted, deps.secretsKey);
    await allowLongKeys(deps, opts.database, version, row.login);
    const apiKey = await makeApiKey(deps, opts.database, version, { login: row.login, password }, now);
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

async function storedApiUser(platform: pg.PoolClient, tenant: string): Promise<StoredApiUser> {
  const stored = await platform.query<StoredApiUser>(
    'SELECT login, password_encrypted, api_key_encrypted, api_key_expires_at FROM tenant_erp_credentials WHERE tenant = $1',
    [tenant],
  );
  const row = stored.rows[0];
  if (!row) throw new Error(`tenant ${tenant} has no ERP API user yet`);
  return row;
}

/** The stored key's expiry when it is more than API_KEY_RENEW_DAYS away and the key still logs in; else undefined. */
async function storedKeyValidUntil(
  deps: ErpApiUserDeps,
  database: string,
  version: number,
  row: StoredApiUser,
  now: Date,
): Promise<Date | undefined> {
  const expiresAt = row.api_key_expires_at;
  if (!row.api_key_encrypted || !expiresAt) return undefined;
  if (expiresAt.getTime() - now.getTime() <= API_KEY_RENEW_DAYS * 86_400_000) return undefined;
  const apiKey = open(row.api_key_encrypted, deps.secretsKey);
  const target = { baseUrl: deps.erpUrl, host: database, db: database, login: row.login };
  const works =
    version >= 19
      ? authenticates(createJson2Client({ ...target, apiKey }))
      : authenticates(createErpClient({ ...target, password: apiKey }));
  return (await works) ? expiresAt : undefined;
}

/** The tenant's admin lets the API user make keys of API_KEY_DAYS (the group API_KEY_GROUP_NAME, made once). */
async function allowLongKeys(deps: ErpApiUserDeps, database: string, version: number, login: string) {
  const { session: admin } = await adminSession(deps, database);
  const [groups, users] = await Promise.all([
    admin.callKw<{ id: number; api_key_duration: number | false }[]>(
      'res.groups',
      'search_read',
      [[['name', '=', API_KEY_GROUP_NAME]]],
      { fields: ['api_key_duration'] },
    ),
    admin.callKw<number[]>('res.users', 'search', [[['login', '=', login]]]),
  ]);
  if (!users[0]) throw new Error(`the ERP API user ${login} of ${database} does not exist`);
  let groupId = groups[0]?.id;
  if (groupId === undefined)
    groupId = await admin.callKw<number>('res.groups', 'create', [
      { name: API_KEY_GROUP_NAME, api_key_duration: API_KEY_DAYS },
    ]);
  else if (groups[0]!.api_key_duration !== API_KEY_DAYS)
    await admin.callKw('res.groups', 'write', [[groupId], { api_key_duration: API_KEY_DAYS }]);
  await admin.callKw('res.users', 'write', [[users[0]], { [groupsField(version)]: [[4, groupId]] }]);
}

/**
 * The API user makes its own key, confirming its password (Odoo's identity check); answers the key.
 * The check reads the password from its stored `password` field before 19, from the context of
 * `run_check` on 19 (where the field is `store=False`: a write is dropped).
 */
async function makeApiKey(
  deps: ErpApiUserDeps,
  database: string,
  version: number,
  user: { login: string; password: string },
  now: Date,
): Promise<string> {
  const session = await openErpSession({ baseUrl: deps.erpUrl, host: database, db: database, ...user });
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
    if (version >= 19) {
      action = await session.callKw('res.users.identitycheck', 'run_check', [[action.res_id]], {
        context: { password: user.password },
      });
    } else {
      await session.callKw('res.users.identitycheck', 'write', [[action.res_id], { password: user.password }]);
      action = await session.callKw('res.users.identitycheck', 'run_check', [[action.res_id]]);
    }
  }
  const apiKey = action.context?.default_key;
  if (typeof apiKey !== 'string' || !apiKey)
    throw new Error(`the ERP of ${database} made no API key (answered ${action.res_model ?? 'no action'})`);
  return apiKey;
}
