/**
 * Odoo's API keys (base/models/res_users.py), as the stand-in serves them, on 18 and 19:
 *
 * - `res.users.apikeys.description` (a wizard: `web_save` {name, duration} as the web client does,
 *   then `make_key`; its `create` is a plain override without `@api.model_create_multi`, so over RPC
 *   its first argument is ids and `vals_list` the second, as on real Odoo 18): the
 *   `duration` selection offers 1/7/30/90/180/365 days up to the largest `api_key_duration` of the
 *   user's groups (1 day when none sets one; unlimited for the admin); another value is Odoo's
 *   ValueError "Wrong value for …";
 * - `make_key` is `@check_identity`: in a fresh web session it answers the action of a
 *   `res.users.identitycheck` wizard; `write` {password} on it (on 19: `run_check` with the password
 *   in its context, the field being `store=False` there) and `run_check` checks the user's own
 *   password (a wrong one: UserError) and then makes the key, answering the action of
 *   `res.users.apikeys.show` whose `context.default_key` is the key (40 hex digits), shown once;
 * - the key is stored in `res_users_apikeys` like Odoo: its first 8 hex digits (`index`) and a
 *   pbkdf2-sha512 hash of 6,000 rounds, with its expiry; `checkApiKey` is Odoo's
 *   `res.users.apikeys._check_credentials` (active user, global scope, not expired).
 *
 * Odoo 17's keys never expire: its description wizard has `name` only (a `duration` is Odoo's
 * ValueError "Invalid field 'duration' …", as is `res.groups.api_key_duration`, which 17 has not),
 * its `create` is the ORM's own (`vals_list` first over RPC), and every key is stored without expiry.
 *
 * Wizards live in memory (Odoo's are transient records); the key table is the tenant database's.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { hashPassword, verifyPassword } from './passwords.js';
import { OdooError, accessError, userError, valueError } from './odoo-errors.js';

export const API_KEY_INDEX_SIZE = 8;
const KEY_ROUNDS = 6_000;
const DURATIONS = [1, 7, 30, 90, 180, 365];

export interface KeyUser {
  database: string;
  /** The tenant's Odoo series (17 has no key expiry). */
  version: string;
  uid: number;
  groups: ReadonlySet<string>;
}

/** The user whose active, unexpired, global-scope key this is, or null (Odoo's `_check_credentials`). */
export async function checkApiKey(db: pg.Pool, key: string): Promise<number | null> {
  if (key.length < API_KEY_INDEX_SIZE) return null;
  const rows = await db.query<{ user_id: number; key: string }>(
    `SELECT k.user_id, k.key FROM res_users_apikeys k JOIN res_users u ON u.id = k.user_id
      WHERE u.active AND k.index = $1 AND k.scope IS NULL
        AND (k.expiration_date IS NULL OR k.expiration_date >= now() at time zone 'utc')`,
    [key.slice(0, API_KEY_INDEX_SIZE)],
  );
  for (const row of rows.rows) if (await verifyPassword(key, row.key)) return row.user_id;
  return null;
}

const action = (resModel: string, name: string, extra: Record<string, unknown> = {}) => ({
  type: 'ir.actions.act_window',
  res_model: resModel,
  name,
  target: 'new',
  views: [[false, 'form']],
  ...extra,
});

type Description = { owner: KeyUser; name: string; expiration: Date | null };
type IdentityCheck = { owner: KeyUser; description: number; password?: string };

const DESCRIPTION = 'res.users.apikeys.description';
const IDENTITY_CHECK = 'res.users.identitycheck';

/** The wizards of one stand-in: API key descriptions and identity checks, by id. */
export function apiKeyWizards() {
  return new ApiKeyWizards();
}

class ApiKeyWizards {
  private nextId = 0;
  private readonly descriptions = new Map<number, Description>();
  private readonly checks = new Map<number, IdentityCheck>();

  handles(model: string): boolean {
    return model === DESCRIPTION || model === IDENTITY_CHECK;
  }

  /** One call on the API key models, or undefined when `model` is not one of them. */
  async call(
    db: pg.Pool,
    user: KeyUser,
    model: string,
    method: string,
    args: unknown[],
    kwargs: Record<string, unknown>,
  ): Promise<unknown> {
    if (model === DESCRIPTION) {
      if (!user.groups.has('base.group_user'))
        throw accessError(
          "You are not allowed to create 'API Key Description' (res.users.apikeys.description) records.",
        );
      if (method === 'create' || method === 'web_save') return this.describe(db, user, method, args, kwargs);
      if (method === 'make_key') {
        // @check_identity: a fresh web session has not confirmed its password in the last 10 minutes
        const [id] = mine(this.descriptions, model, user, args[0] ?? kwargs.ids);
        this.checks.set(++this.nextId, { owner: user, description: id });
        return action(IDENTITY_CHECK, 'Security Control', { res_id: this.nextId });
      }
    }
    if (model === IDENTITY_CHECK) {
      if (method === 'write') {
        const [, check] = mine(this.checks, model, user, args[0]);
        const vals = (args[1] ?? kwargs.vals) as { password?: unknown } | undefined;
        // on 19 `password` is store=False: a write is dropped, run_check reads it from its context
        if (typeof vals?.password === 'string' && user.version !== '19') check.password = vals.password;
        return true;
      }
      if (method === 'run_check') {
        const context = kwargs.context as { password?: unknown } | undefined;
        if (user.version === '19') {
          const [, check] = mine(this.checks, model, user, args[0] ?? kwargs.ids);
          check.password = typeof context?.password === 'string' ? context.password : undefined;
        }
        return this.runCheck(db, user, args[0] ?? kwargs.ids);
      }
    }
    return undefined;
  }

  /** create(ids, vals_list) (not a model method over RPC); web_save(ids, vals, specification) → [{id}] */
  private async describe(
    db: pg.Pool,
    user: KeyUser,
    method: 'create' | 'web_save',
    args: unknown[],
    kwargs: Record<string, unknown>,
  ) {
    if (method === 'web_save' && Array.isArray(args[0]) && args[0].length)
      throw userError('The API key description cannot be edited');
    const legacy = user.version === '17';
    const given =
      method === 'web_save'
        ? (args[1] ?? kwargs.vals)
        : legacy
          ? (args[0] ?? kwargs.vals_list)
          : (args[1] ?? kwargs.vals_list);
    if (given === undefined)
      throw new OdooError(
        1,
        `APIKeyDescription.create() missing 1 required positional argument: 'vals_list'`,
        'TypeError',
      );
    const list = (Array.isArray(given) ? given : [given]) as Record<string, unknown>[];
    const ids: number[] = [];
    const max = legacy ? 0 : await maxDuration(db, user);
    for (const vals of list) {
      if (legacy && vals && typeof vals === 'object' && 'duration' in vals)
        throw valueError(`Invalid field 'duration' on model '${DESCRIPTION}'`);
      if (!vals || typeof vals !== 'object' || typeof vals.name !== 'string' || !vals.name)
        throw userError('The operation cannot be completed: Description is required');
      const expiration = legacy ? null : expirationOf(vals.duration, max);
      this.descriptions.set(++this.nextId, { owner: user, name: vals.name, expiration });
      ids.push(this.nextId);
    }
    if (method === 'web_save') return ids.map((id) => ({ id }));
    return Array.isArray(given) ? ids : ids[0];
  }

  /** The identity check's password confirmed: the key is made, shown once. */
  private async runCheck(db: pg.Pool, user: KeyUser, ids: unknown) {
    const [id, check] = mine(this.checks, IDENTITY_CHECK, user, ids);
    const stored = await db.query<{ password: string | null }>('SELECT password FROM res_users WHERE id = $1', [
      user.uid,
    ]);
    if (!check.password || !(await verifyPassword(check.password, stored.rows[0]?.password))) {
      throw userError('Incorrect Password, try again or click on Forgot Password to reset your password.');
    }
    this.checks.delete(id);
    const description = this.descriptions.get(check.description);
    if (!description) throw userError('Record does not exist or has been deleted.');
    this.descriptions.delete(check.description);
    const key = randomBytes(20).toString('hex');
    await db.query(
      `INSERT INTO res_users_apikeys (name, user_id, scope, expiration_date, key, index) VALUES ($1, $2, NULL, $3, $4, $5)`,
      [
        description.name,
        user.uid,
        description.expiration?.toISOString().replace('T', ' ').replace('Z', '') ?? null,
        hashPassword(key, KEY_ROUNDS),
        key.slice(0, API_KEY_INDEX_SIZE),
      ],
    );
    return action('res.users.apikeys.show', 'API Key Ready', { context: { default_key: key } });
  }
}

/** The wizard record `ids` names, if it is the user's own (else Odoo's MissingError). */
function mine<T extends { owner: KeyUser }>(
  map: Map<number, T>,
  model: string,
  user: KeyUser,
  ids: unknown,
): [number, T] {
  const id = Array.isArray(ids) ? ids[0] : ids;
  const record = typeof id === 'number' ? map.get(id) : undefined;
  if (!record || record.owner.database !== user.database || record.owner.uid !== user.uid) {
    throw new OdooError(
      2,
      `Record does not exist or has been deleted.\n(Record: ${model}(${String(id)},), User: ${user.uid})`,
      'odoo.exceptions.MissingError',
    );
  }
  return [id as number, record];
}

/** The longest key life the user's groups allow (days; Infinity for the admin, 1 when none sets one). */
async function maxDuration(db: pg.Pool, user: KeyUser): Promise<number> {
  if (user.groups.has('base.group_system')) return Infinity;
  const res = await db.query<{ max: number | null }>(
    'SELECT max(g.api_key_duration) AS max FROM res_groups g JOIN res_groups_users_rel r ON r.gid = g.id WHERE r.uid = $1',
    [user.uid],
  );
  return res.rows[0]?.max || 1;
}

/** The `duration` selection checked against what the user may choose, as the key's expiry (null: never). */
function expirationOf(value: unknown, max: number): Date | null {
  const duration = String(value ?? '1');
  const offered = DURATIONS.filter((d) => d <= max).map(String);
  if (max === Infinity) offered.push('0');
  if (!offered.includes(duration))
    throw valueError(`Wrong value for res.users.apikeys.description.duration: '${duration}'`);
  const days = Number(duration);
  const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
  return days ? new Date(today.getTime() + days * 86_400_000) : null;
}
