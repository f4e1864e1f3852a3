/**
 * What every ORM method of the stand-in works with: the call's context (tenant database, version,
 * user), the models of the version, and the argument checks Odoo's methods share (ids, limits, the
 * record rules' scope).
 */
import type pg from 'pg';
import type { ErpVersion } from './odoo-series.js';
import { odooModels, type ModelDef } from './models.js';
import { pyRepr } from './domain.js';
import { typeError } from './odoo-errors.js';
import { companyRule } from './security.js';

export interface OrmContext {
  /** The tenant database (a pool; inside a create, that create's transaction). */
  db: pg.Pool | pg.PoolClient;
  version: ErpVersion;
  uid: number;
  /** External ids of the user's groups, implied ones included (e.g. `account.group_account_readonly`). */
  groups: ReadonlySet<string>;
  /** The companies the user is linked to (`res.users.company_ids`): the record rules' scope. */
  companyIds: readonly number[];
}

export type Kwargs = Record<string, unknown>;
export type Method = (ctx: OrmContext, model: ModelDef, a: Kwargs) => Promise<unknown>;

const modelsByVersion = new Map<ErpVersion, Record<string, ModelDef>>();
export const modelsFor = (version: ErpVersion) => {
  let models = modelsByVersion.get(version);
  if (!models) modelsByVersion.set(version, (models = odooModels(version)));
  return models;
};

/** The caller's domain restricted by the model's record rules (the multi-company rule). */
export function scoped(ctx: OrmContext, model: ModelDef, domain: unknown): unknown {
  const rule = companyRule(model, ctx.companyIds);
  if (!rule.length) return domain ?? [];
  if (domain === undefined || domain === null || domain === false) return rule;
  return Array.isArray(domain) ? [...rule, ...domain] : domain; // a malformed domain keeps its own fault
}

export const int = (value: unknown, name: string, fallback: number | null): number | null => {
  if (value === undefined || value === null || value === false) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw typeError(`'${name}' must be a non-negative integer, not ${pyRepr(value)}`);
  return value;
};

export function idsOf(value: unknown): number[] {
  const ids = typeof value === 'number' ? [value] : value;
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'number' || !Number.isInteger(id)))
    throw typeError(`ids must be a list of integers, not ${pyRepr(value)}`);
  return ids as number[];
}

/**
 * Runs `fn` in one transaction on a connection of its own, as Odoo's request cursor: all of it or
 * none, and a reader never sees it half done.
 */
export async function inTransaction<T>(
  ctx: OrmContext,
  fn: (tx: OrmContext & { db: pg.PoolClient }) => Promise<T>,
): Promise<T> {
  const client = await (ctx.db as pg.Pool).connect();
  try {
    await client.query('BEGIN');
    const result = await fn({ ...ctx, db: client });
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
