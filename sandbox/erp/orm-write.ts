/** The ORM's writing methods: create, write and unlink, with many2many commands. */
import type { ModelDef } from './models.js';
import { SqlBuilder, pyRepr } from './domain.js';
import { missingRecords, validationError, valueError } from './odoo-errors.js';
import { idsOf, inTransaction, modelsFor, scoped, type Method, type OrmContext } from './orm-context.js';
import {
  checkUserCompanies,
  createDefaults,
  createUserPartner,
  invoiceDefaults,
  mandatoryField,
  userDefaults,
} from './orm-defaults.js';
import { writableValues } from './orm-fields.js';

/** Odoo's `_sql_constraints` messages, by constraint name: a violation is their ValidationError. */
const UNIQUE_MESSAGES: Record<string, string> = {
  account_bank_statement_line_unique_import_id: 'A bank account transactions can be imported only once!',
};

export const writeMethods: Record<string, Method> = {
  async create(ctx, model, a) {
    const single = !Array.isArray(a.vals_list);
    const list = (single ? [a.vals_list] : a.vals_list) as unknown[];
    // one transaction for the whole vals_list, as Odoo's create: all records or none
    const ids = await inTransaction(ctx, async (tx) => {
      const created: number[] = [];
      for (const raw of list) created.push(await createRecord(tx, model, raw));
      return created;
    }).catch((err: unknown) => {
      const pgErr = err as { code?: string; constraint?: string };
      const message = pgErr.code === '23505' && pgErr.constraint ? UNIQUE_MESSAGES[pgErr.constraint] : undefined;
      if (message) throw validationError(message);
      throw err;
    });
    return single ? ids[0] : ids;
  },

  async write(ctx, model, a) {
    const ids = idsOf(a.ids);
    const { columns, links } = writableValues(model, a.vals);
    const b = new SqlBuilder(modelsFor(ctx.version));
    const sets = Object.entries(columns).map(([name, value]) => `${name} = ${b.param(value)}`);
    sets.push("write_date = now() at time zone 'UTC'");
    const visible = b.where(model, scoped(ctx, model, []));
    // one transaction, as Odoo's request cursor: a reader never sees a many2many half replaced
    // (e.g. an automation rule's webhook fields while a reconcile rewrites the rule)
    await inTransaction(ctx, async (tx) => {
      const res = await tx.db.query(
        `UPDATE ${model.table} t SET ${sets.join(', ')} WHERE id = ANY(${b.param(ids)}) AND ${visible}`,
        b.params,
      );
      if (res.rowCount !== ids.length) throw missingRecords(model.name, ids, ctx.uid);
      await applyLinks(tx, model, ids, links);
      if (model.name === 'res.users') await writeUserPartner(tx, ids, a.vals);
    });
    return true;
  },

  async unlink(ctx, model, a) {
    const ids = idsOf(a.ids);
    const b = new SqlBuilder(modelsFor(ctx.version));
    const visible = b.where(model, scoped(ctx, model, []));
    await ctx.db.query(`DELETE FROM ${model.table} t WHERE id = ANY(${b.param(ids)}) AND ${visible}`, b.params);
    return true;
  },
};

/**
 * The x2many commands Odoo accepts for a many2many: `[6, 0, ids]` replace, `[4, id]` link,
 * `[3, id]` unlink, `[5]` clear; a plain list of ids is a replace, as in Odoo.
 */
async function applyLinks(
  ctx: OrmContext,
  model: ModelDef,
  ids: number[],
  links: Record<string, unknown>,
): Promise<void> {
  for (const [name, value] of Object.entries(links)) {
    const link = model.fields[name]!.link!;
    const commands =
      Array.isArray(value) && value.every((v) => typeof v === 'number') ? [[6, 0, value]] : (value as unknown[]);
    if (!Array.isArray(commands))
      throw valueError(`Invalid value ${pyRepr(value)} for the many2many field ${pyRepr(name)}`);
    for (const command of commands) {
      if (!Array.isArray(command) || typeof command[0] !== 'number')
        throw valueError(`Invalid x2many command ${pyRepr(command)} for ${pyRepr(name)}`);
      const [op, arg, list] = command as [number, unknown, unknown];
      const ofIds = (v: unknown) => idsOf(v ?? []);
      for (const id of ids) {
        if (op === 6 || op === 5) await ctx.db.query(`DELETE FROM ${link.table} WHERE ${link.column} = $1`, [id]);
        const add = op === 6 ? ofIds(list) : op === 4 ? ofIds(arg) : [];
        for (const other of add) {
          await ctx.db.query(
            `INSERT INTO ${link.table} (${link.column}, ${link.other}) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
            [id, other],
          );
        }
        if (op === 3)
          await ctx.db.query(`DELETE FROM ${link.table} WHERE ${link.column} = $1 AND ${link.other} = ANY($2)`, [
            id,
            ofIds(arg),
          ]);
        if (![3, 4, 5, 6].includes(op)) throw valueError(`The x2many command ${op} is not served by this stand-in`);
      }
    }
  }
}

/** One record of a create, in the create's transaction: defaults, mandatory fields, the row, its links. */
async function createRecord(tx: OrmContext, model: ModelDef, raw: unknown): Promise<number> {
  const vals =
    model.name === 'res.users'
      ? await userDefaults(tx, raw)
      : model.name === 'account.move'
        ? invoiceDefaults(raw)
        : raw;
  const { columns, links } = writableValues(model, vals);
  if (model.name === 'res.users') columns.partner_id ??= await createUserPartner(tx, vals as Record<string, unknown>);
  for (const [name, field] of Object.entries(model.fields)) {
    if (field.required && !field.sql && (columns[name] === undefined || columns[name] === null))
      throw mandatoryField(model, name);
  }
  const row = { ...(await createDefaults(tx, model, columns)), ...columns };
  // base_automation computes an automation action's name from its type (ir_actions_server.py)
  if (model.name === 'ir.actions.server' && row.usage === 'base_automation' && row.state === 'webhook')
    row.name = 'Send Webhook Notification';
  if (model.name === 'base.automation') row.active ??= true;
  const b = new SqlBuilder(modelsFor(tx.version));
  const names = Object.keys(row);
  const sql = names.length
    ? `INSERT INTO ${model.table} (${names.join(', ')}) VALUES (${names.map((n) => b.param(row[n])).join(', ')}) RETURNING id`
    : `INSERT INTO ${model.table} DEFAULT VALUES RETURNING id`;
  const id = (await tx.db.query<{ id: number }>(sql, b.params)).rows[0]!.id;
  await applyLinks(tx, model, [id], links);
  if (model.name === 'res.users') await checkUserCompanies(tx, id);
  return id;
}

/** res.users inherits res.partner: its name is written on the partner; its companies are checked. */
async function writeUserPartner(tx: OrmContext, ids: number[], vals: unknown): Promise<void> {
  const name = (vals as Record<string, unknown>).name;
  if (typeof name === 'string' && name) {
    await tx.db.query(
      'UPDATE res_partner SET name = $1, complete_name = $1 WHERE id IN (SELECT partner_id FROM res_users WHERE id = ANY($2))',
      [name, ids],
    );
  }
  for (const id of ids) await checkUserCompanies(tx, id);
}
