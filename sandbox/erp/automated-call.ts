/**
 * One ORM call as a user, on the route's tenant database. A create or write on a model with
 * automation rules runs them as Odoo does (automation.ts): pre-domain before, domain after, a
 * webhook post per matching record, before the call answers.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { loadNone, matching, postWebhook, pythonJson, webhookRules, type WebhookRule } from './automation.js';
import type { UserRights } from './credentials.js';
import type { ModelDef } from './models.js';
import { executeKw, modelsFor, type OrmContext } from './orm.js';
import { ACCESS } from './security.js';
import type { Route, TenantDatabases } from './tenant-databases.js';

export type OrmCall = (
  route: Route,
  user: UserRights,
  model: string,
  method: string,
  args: unknown[],
  kwargs: Record<string, unknown>,
) => Promise<unknown>;

export function automatedOrmCall(tenants: TenantDatabases, log: Logger): OrmCall {
  return (route, user, model, method, args, kwargs) =>
    tenants.onTenantDb(route, async (pool) => {
      const ctx: OrmContext = {
        db: pool,
        version: route.version,
        uid: user.uid,
        groups: user.groups,
        companyIds: user.companyIds,
      };
      const def = modelsFor(route.version)[model];
      const warn = (msg: string) => log.warn({ tenant: route.tenant, model }, msg);
      const writes = method === 'write' || method === 'action_post';
      const rules = def && (method === 'create' || writes) ? await webhookRules(pool, model, warn) : [];
      if (!def || rules.length === 0) return executeKw(ctx, model, method, args, kwargs);

      const written = writes ? [args[0] ?? kwargs.ids].flat().filter((id): id is number => typeof id === 'number') : [];
      const before = new Map<number, number[]>();
      for (const rule of rules)
        before.set(rule.actionId, await matching(pool, modelsFor(route.version), def, written, rule.preDomain));
      const result = await executeKw(ctx, model, method, args, kwargs);
      const created = method === 'create' ? [result].flat().filter((id): id is number => typeof id === 'number') : [];
      const candidates = (rule: WebhookRule) => (method === 'create' ? created : before.get(rule.actionId)!);
      await runWebhookRules(await superuserOf(ctx, pool), model, def, rules, candidates, warn);
      return result;
    });
}

/** The action reads the record as the superuser (the rule runs sudo). */
async function superuserOf(ctx: OrmContext, pool: pg.Pool): Promise<OrmContext> {
  const companies = (await pool.query<{ id: number }>('SELECT id FROM res_company')).rows.map((r) => r.id);
  return { ...ctx, uid: 1, groups: new Set(Object.keys(ACCESS)), companyIds: companies };
}

/** Each rule's webhook post for every candidate record its domain matches after the call. */
async function runWebhookRules(
  superuser: OrmContext,
  model: string,
  def: ModelDef,
  rules: WebhookRule[],
  candidates: (rule: WebhookRule) => number[],
  warn: (msg: string) => void,
) {
  const pool = superuser.db as pg.Pool;
  for (const rule of rules) {
    for (const id of await matching(pool, modelsFor(superuser.version), def, candidates(rule), rule.domain)) {
      const [row] = rule.fields.length
        ? ((await executeKw(superuser, model, 'read', [[id], rule.fields], {})) as Record<string, unknown>[])
        : [{}];
      const body = pythonJson({
        ...loadNone(def, row ?? {}),
        _model: model,
        _id: id,
        _action: `${rule.actionName}(#${rule.actionId})`,
      });
      await postWebhook(rule.url, body, warn);
    }
  }
}
