/** The ORM's read methods: search, search_count, search_read, read and fields_get. */
import type { FieldDef, ModelDef } from './models.js';
import { SqlBuilder } from './domain.js';
import { missingRecords } from './odoo-errors.js';
import { idsOf, int, modelsFor, scoped, type Kwargs, type Method, type OrmContext } from './orm-context.js';
import { fieldNames, readValue, selectExpressions } from './orm-fields.js';

export async function searchRecords(
  ctx: OrmContext,
  model: ModelDef,
  a: Kwargs,
  fields: string[],
): Promise<Record<string, unknown>[]> {
  const b = new SqlBuilder(modelsFor(ctx.version));
  const where = b.where(model, scoped(ctx, model, a.domain));
  const order = b.orderBy(model, typeof a.order === 'string' && a.order ? a.order : model.order);
  const limit = int(a.limit, 'limit', null);
  const offset = int(a.offset, 'offset', 0);
  const sql = `SELECT ${selectExpressions(b, model, fields)} FROM ${model.table} t WHERE ${where} ORDER BY ${order}${limit !== null ? ` LIMIT ${b.param(limit)}` : ''} OFFSET ${b.param(offset)}`;
  const res = await ctx.db.query(sql, b.params);
  return res.rows.map((row) =>
    Object.fromEntries(
      fields.map((f, i) => [
        f,
        readValue(f === 'display_name' ? { type: 'char', string: '' } : model.fields[f], row[`c${i}`], row[`n${i}`]),
      ]),
    ),
  );
}

export const readMethods: Record<string, Method> = {
  async search(ctx, model, a) {
    return (await searchRecords(ctx, model, a, ['id'])).map((r) => r.id);
  },

  async search_count(ctx, model, a) {
    const b = new SqlBuilder(modelsFor(ctx.version));
    const where = b.where(model, scoped(ctx, model, a.domain));
    const limit = int(a.limit, 'limit', null);
    const inner = `SELECT 1 FROM ${model.table} t WHERE ${where}${limit !== null ? ` LIMIT ${b.param(limit)}` : ''}`;
    const res = await ctx.db.query<{ count: number }>(`SELECT count(*)::int AS count FROM (${inner}) q`, b.params);
    return res.rows[0]!.count;
  },

  async search_read(ctx, model, a) {
    return searchRecords(ctx, model, a, fieldNames(model, a.fields));
  },

  async read(ctx, model, a) {
    const ids = idsOf(a.ids);
    const fields = fieldNames(model, a.fields);
    const rows = await searchRecords(ctx, model, { domain: [['id', 'in', ids]] }, fields);
    const byId = new Map(rows.map((r) => [r.id as number, r]));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length) {
      throw missingRecords(model.name, missing, ctx.uid);
    }
    return ids.map((id) => byId.get(id));
  },

  async fields_get(ctx, model, a) {
    const wanted = Array.isArray(a.allfields) && a.allfields.length ? new Set(a.allfields as string[]) : undefined;
    const attributes = Array.isArray(a.attributes) && a.attributes.length ? (a.attributes as string[]) : undefined;
    // display_name is a computed field on every model (the record's _rec_name)
    const all: [string, FieldDef][] = [
      ...Object.entries(model.fields),
      ['display_name', { type: 'char', string: 'Display Name', sql: model.recName }],
    ];
    return Object.fromEntries(
      all
        .filter(([name]) => !wanted || wanted.has(name))
        .map(([name, f]) => {
          const description: Record<string, unknown> = {
            type: f.type,
            string: f.string,
            required: Boolean(f.required),
            readonly: Boolean(f.sql) || name === 'id',
            store: !f.sql,
            searchable: true,
            sortable: f.type !== 'many2many',
          };
          if (f.relation) description.relation = f.relation;
          if (f.selection) description.selection = f.selection;
          return [
            name,
            attributes
              ? Object.fromEntries(attributes.filter((k) => k in description).map((k) => [k, description[k]]))
              : description,
          ];
        }),
    );
  },
};
