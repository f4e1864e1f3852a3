/**
 * The ORM methods the stand-in serves through `execute_kw`, on one tenant database: search,
 * search_count, search_read, read, read_group (17, 18, 19), formatted_read_group (19),
 * fields_get, and create/write/unlink for users whose groups allow writing (the platform's
 * read-only API user gets Odoo's AccessError). Results are shaped as Odoo returns them: empty
 * values are `false`, many2one values `[id, display name]`, dates `YYYY-MM-DD` strings.
 */
import type pg from 'pg';
import type { ErpVersion } from '../../domain/tenants/types.js';
import { odooModels, type FieldDef, type ModelDef } from './models.js';
import { SqlBuilder, pyRepr } from './domain.js';
import { accessError, attributeError, missingError, typeError, userError, valueError } from './odoo-errors.js';
import { GROUPS } from './demo-data.js';

export interface OrmContext {
  db: pg.Pool;
  version: ErpVersion;
  uid: number;
  groups: ReadonlySet<number>;
}

type Kwargs = Record<string, unknown>;
type Method = (ctx: OrmContext, model: ModelDef, a: Kwargs) => Promise<unknown>;

/** Each method's Python signature: positional args are bound to these names, as Python does. */
const signatures: Record<string, { params: string[]; versions?: ErpVersion[]; write?: 'create' | 'write' | 'unlink' }> = {
  search: { params: ['domain', 'offset', 'limit', 'order'] },
  search_count: { params: ['domain', 'limit'] },
  search_read: { params: ['domain', 'fields', 'offset', 'limit', 'order'] },
  read: { params: ['ids', 'fields', 'load'] },
  read_group: { params: ['domain', 'fields', 'groupby', 'offset', 'limit', 'orderby', 'lazy'] },
  formatted_read_group: { params: ['domain', 'groupby', 'aggregates', 'having', 'offset', 'limit', 'order'], versions: ['19'] },
  fields_get: { params: ['allfields', 'attributes'] },
  create: { params: ['vals_list'], write: 'create' },
  write: { params: ['ids', 'vals'], write: 'write' },
  unlink: { params: ['ids'], write: 'unlink' },
};

const WRITE_GROUPS = [GROUPS.settings, GROUPS.accountingManager];
const modelsByVersion = new Map<ErpVersion, Record<string, ModelDef>>();
export const modelsFor = (version: ErpVersion) => {
  let models = modelsByVersion.get(version);
  if (!models) modelsByVersion.set(version, (models = odooModels(version)));
  return models;
};

export async function executeKw(ctx: OrmContext, modelName: string, method: string, args: unknown[], kwargs: Kwargs): Promise<unknown> {
  const models = modelsFor(ctx.version);
  const model = models[modelName];
  if (!model) throw userError(`Object ${modelName} doesn't exist`);
  if (method.startsWith('_')) throw accessError(`Private methods (such as ${method}) cannot be called remotely.`);
  const signature = signatures[method];
  if (!signature || (signature.versions && !signature.versions.includes(ctx.version))) {
    throw attributeError(`The method '${method}' does not exist on the model '${modelName}'`);
  }
  if (signature.write) checkWriteAccess(ctx, model, signature.write);
  const bound: Kwargs = {};
  if (args.length > signature.params.length) throw typeError(`${method}() takes ${signature.params.length + 1} positional arguments but ${args.length + 1} were given`);
  args.forEach((value, i) => (bound[signature.params[i]!] = value));
  for (const [key, value] of Object.entries(kwargs)) {
    if (key === 'context') continue;
    if (!signature.params.includes(key)) throw typeError(`${method}() got an unexpected keyword argument '${key}'`);
    if (key in bound) throw typeError(`${method}() got multiple values for argument '${key}'`);
    bound[key] = value;
  }
  return methods[method]!(ctx, model, bound);
}

function checkWriteAccess(ctx: OrmContext, model: ModelDef, operation: 'create' | 'write' | 'unlink') {
  if (WRITE_GROUPS.some((g) => ctx.groups.has(g))) return;
  const verb = { create: 'create', write: 'modify', unlink: 'delete' }[operation];
  throw accessError(
    `You are not allowed to ${verb} '${model.description}' (${model.name}) records.\n\n` +
      'This operation is allowed for the following groups:\n\t- Accounting/Administrator\n\t- Administration/Settings\n\n' +
      'Contact your administrator to request access if necessary.',
  );
}

const int = (value: unknown, name: string, fallback: number | null): number | null => {
  if (value === undefined || value === null || value === false) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw typeError(`'${name}' must be a non-negative integer, not ${pyRepr(value)}`);
  return value;
};

function fieldNames(model: ModelDef, fields: unknown): string[] {
  if (fields === undefined || fields === null || fields === false || (Array.isArray(fields) && fields.length === 0)) {
    return ['id', ...Object.keys(model.fields).filter((f) => f !== 'id'), 'display_name'];
  }
  if (!Array.isArray(fields) || fields.some((f) => typeof f !== 'string')) throw typeError(`fields must be a list of field names, not ${pyRepr(fields)}`);
  for (const f of fields as string[]) {
    if (f !== 'display_name' && !model.fields[f]) throw valueError(`Invalid field ${pyRepr(f)} on model ${pyRepr(model.name)}`);
  }
  return ['id', ...(fields as string[]).filter((f) => f !== 'id')];
}

function selectExpressions(b: SqlBuilder, model: ModelDef, names: string[]): string {
  return names
    .map((name, i) => {
      if (name === 'display_name') return `${b.column(model, model.recName, 't')} AS c${i}`;
      const field = model.fields[name]!;
      const col = b.column(model, name, 't');
      switch (field.type) {
        case 'date':
          return `to_char(${col}, 'YYYY-MM-DD') AS c${i}`;
        case 'datetime':
          return `to_char(${col}, 'YYYY-MM-DD HH24:MI:SS') AS c${i}`;
        case 'monetary':
          return `${col}::float8 AS c${i}`;
        case 'many2one': {
          const comodel = b.models[field.relation!]!;
          return `${col} AS c${i}, (SELECT ${b.column(comodel, comodel.recName, 'r')} FROM ${comodel.table} r WHERE r.id = ${col}) AS n${i}`;
        }
        case 'many2many':
          return `ARRAY(SELECT l.${field.link!.other} FROM ${field.link!.table} l WHERE l.${field.link!.column} = t.id ORDER BY 1) AS c${i}`;
        default:
          return `${col} AS c${i}`;
      }
    })
    .join(', ');
}

/** Odoo's `convert_to_read`: numbers default to 0, everything else empty is False. */
function readValue(field: FieldDef | undefined, value: unknown, name?: unknown): unknown {
  if (!field) return value ?? false;
  switch (field.type) {
    case 'integer':
    case 'float':
    case 'monetary':
      return value === null ? 0 : Number(value);
    case 'boolean':
      return value === true;
    case 'many2one':
      return value === null ? false : [value, name ?? false];
    case 'many2many':
      return value ?? [];
    default:
      return value ?? false;
  }
}

async function searchRecords(ctx: OrmContext, model: ModelDef, a: Kwargs, fields: string[]): Promise<Record<string, unknown>[]> {
  const b = new SqlBuilder(modelsFor(ctx.version));
  const where = b.where(model, a.domain ?? []);
  const order = b.orderBy(model, typeof a.order === 'string' && a.order ? a.order : model.order);
  const limit = int(a.limit, 'limit', null);
  const offset = int(a.offset, 'offset', 0);
  const sql = `SELECT ${selectExpressions(b, model, fields)} FROM ${model.table} t WHERE ${where} ORDER BY ${order}${limit !== null ? ` LIMIT ${b.param(limit)}` : ''} OFFSET ${b.param(offset)}`;
  const res = await ctx.db.query(sql, b.params);
  return res.rows.map((row) => Object.fromEntries(fields.map((f, i) => [f, readValue(f === 'display_name' ? { type: 'char', string: '' } : model.fields[f], row[`c${i}`], row[`n${i}`])])));
}

function idsOf(value: unknown): number[] {
  const ids = typeof value === 'number' ? [value] : value;
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'number' || !Number.isInteger(id))) throw typeError(`ids must be a list of integers, not ${pyRepr(value)}`);
  return ids as number[];
}

const GRANULARITIES = ['day', 'week', 'month', 'quarter', 'year'] as const;
type Granularity = (typeof GRANULARITIES)[number];
const monthNames = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

interface GroupSpec {
  spec: string;
  field: string;
  def: FieldDef;
  granularity?: Granularity;
}
interface AggregateSpec {
  key: string;
  field: string;
  fn: string;
}

function parseGroupby(model: ModelDef, specs: unknown): GroupSpec[] {
  const list = typeof specs === 'string' ? [specs] : specs ?? [];
  if (!Array.isArray(list)) throw typeError(`groupby must be a list, not ${pyRepr(specs)}`);
  return list.map((spec) => {
    if (typeof spec !== 'string') throw valueError(`Invalid groupby ${pyRepr(spec)}`);
    const [field, granularity] = spec.split(':') as [string, string | undefined];
    const def = model.fields[field];
    if (!def || def.type === 'many2many' || def.sql) throw valueError(`Invalid field ${pyRepr(field)} on model ${pyRepr(model.name)}`);
    const isDate = def.type === 'date' || def.type === 'datetime';
    if (granularity !== undefined && (!isDate || !GRANULARITIES.includes(granularity as Granularity))) throw valueError(`Invalid groupby ${pyRepr(spec)}`);
    return { spec, field, def, granularity: isDate ? ((granularity as Granularity) ?? 'month') : undefined };
  });
}

const AGGREGATES = new Set(['sum', 'avg', 'min', 'max', 'count', 'count_distinct', 'bool_and', 'bool_or']);
function parseAggregate(model: ModelDef, spec: string): AggregateSpec | undefined {
  const match = /^(\w+)(?::(\w+)(?:\((\w+)\))?)?$/.exec(spec);
  if (!match) throw valueError(`Invalid field specification ${pyRepr(spec)}.`);
  const [, name, fn, source] = match as unknown as [string, string, string | undefined, string | undefined];
  const field = source ?? name;
  const def = model.fields[field];
  if (!def) throw valueError(`Invalid field ${pyRepr(field)} on model ${pyRepr(model.name)}`);
  const numeric = ['integer', 'float', 'monetary'].includes(def.type);
  if (!fn) return numeric && field !== 'id' ? { key: name, field, fn: 'sum' } : undefined; // Odoo's default aggregator
  if (!AGGREGATES.has(fn)) throw valueError(`Invalid aggregation function ${pyRepr(fn)}.`);
  return { key: name, field, fn };
}

async function groupRows(ctx: OrmContext, model: ModelDef, domain: unknown, groups: GroupSpec[], aggregates: AggregateSpec[], opts: { order?: unknown; limit?: unknown; offset?: unknown }) {
  const b = new SqlBuilder(modelsFor(ctx.version));
  const where = b.where(model, domain ?? []);
  const groupExprs = groups.map((g) => (g.granularity ? `date_trunc('${g.granularity}', t.${g.field})::date` : `t.${g.field}`));
  const select = [
    ...groupExprs.map((e, i) => (groups[i]!.granularity ? `to_char(${e}, 'YYYY-MM-DD') AS g${i}` : `${e} AS g${i}`)),
    ...groups.map((g, i) => (g.def.type === 'many2one' ? `(SELECT ${b.column(b.models[g.def.relation!]!, b.models[g.def.relation!]!.recName, 'r')} FROM ${b.models[g.def.relation!]!.table} r WHERE r.id = ${groupExprs[i]}) AS n${i}` : `NULL AS n${i}`)),
    'count(*)::int AS __count',
    ...aggregates.map((a, i) => {
      const col = b.column(model, a.field, 't');
      const expr = a.fn === 'count_distinct' ? `count(DISTINCT ${col})` : `${a.fn}(${col})`;
      return `${expr}${['sum', 'avg', 'min', 'max'].includes(a.fn) && model.fields[a.field]!.type !== 'date' ? '::float8' : ''} AS a${i}`;
    }),
  ];
  let order = groupExprs.map((e) => `${e} ASC`).join(', ');
  if (typeof opts.order === 'string' && opts.order.trim()) {
    order = opts.order
      .split(',')
      .map((part) => {
        const [name, dir = 'asc'] = part.trim().split(/\s+/) as [string, string?];
        if (!/^(asc|desc)$/i.test(dir)) throw valueError(`Invalid order ${pyRepr(opts.order)}`);
        const gi = groups.findIndex((g) => g.spec === name || g.field === name);
        const ai = aggregates.findIndex((a) => a.key === name || `${a.field}:${a.fn}` === name);
        const expr = gi >= 0 ? groupExprs[gi] : ai >= 0 ? `a${ai}` : name === '__count' ? '__count' : undefined;
        if (!expr) throw valueError(`Invalid order ${pyRepr(opts.order)} for read_group`);
        return `${expr} ${dir.toUpperCase()}`;
      })
      .join(', ');
  }
  const limit = int(opts.limit, 'limit', null);
  const offset = int(opts.offset, 'offset', 0);
  const sql =
    `SELECT ${select.join(', ')} FROM ${model.table} t WHERE ${where}` +
    (groups.length ? ` GROUP BY ${groupExprs.join(', ')}` : '') +
    (order ? ` ORDER BY ${order}` : '') +
    (limit !== null ? ` LIMIT ${b.param(limit)}` : '') +
    ` OFFSET ${b.param(offset)}`;
  return (await ctx.db.query(sql, b.params)).rows as Record<string, unknown>[];
}

function dateRange(day: string, granularity: Granularity): { from: string; to: string; label: string } {
  const d = new Date(`${day}T00:00:00Z`);
  const end = new Date(d);
  const y = d.getUTCFullYear();
  switch (granularity) {
    case 'day':
      end.setUTCDate(end.getUTCDate() + 1);
      return { from: day, to: end.toISOString().slice(0, 10), label: `${String(d.getUTCDate()).padStart(2, '0')} ${monthNames[d.getUTCMonth()]!.slice(0, 3)} ${y}` };
    case 'week': {
      end.setUTCDate(end.getUTCDate() + 7);
      const thursday = new Date(d);
      thursday.setUTCDate(d.getUTCDate() + 3);
      const week = Math.ceil(((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / 86_400_000 + 1) / 7);
      return { from: day, to: end.toISOString().slice(0, 10), label: `W${week} ${thursday.getUTCFullYear()}` };
    }
    case 'month':
      end.setUTCMonth(end.getUTCMonth() + 1);
      return { from: day, to: end.toISOString().slice(0, 10), label: `${monthNames[d.getUTCMonth()]} ${y}` };
    case 'quarter':
      end.setUTCMonth(end.getUTCMonth() + 3);
      return { from: day, to: end.toISOString().slice(0, 10), label: `Q${Math.floor(d.getUTCMonth() / 3) + 1} ${y}` };
    case 'year':
      end.setUTCFullYear(y + 1);
      return { from: day, to: end.toISOString().slice(0, 10), label: String(y) };
  }
}

/** The group's own condition (`__domain` on 17/18, `__extra_domain` on 19). */
function groupDomain(g: GroupSpec, value: unknown): unknown[] {
  if (value === null) return [[g.field, '=', false]];
  if (g.granularity) {
    const r = dateRange(String(value), g.granularity);
    return ['&', [g.field, '>=', r.from], [g.field, '<', r.to]];
  }
  return [[g.field, '=', value]];
}

function groupValue(g: GroupSpec, value: unknown, name: unknown, style: 'read_group' | 'formatted'): unknown {
  if (value === null) return false;
  if (g.granularity) {
    const r = dateRange(String(value), g.granularity);
    return style === 'read_group' ? r.label : [r.from, r.label];
  }
  if (g.def.type === 'many2one') return [value, name ?? false];
  return readValue(g.def, value);
}

const aggregateValue = (value: unknown) => (value === null ? false : typeof value === 'string' ? Number(value) : value);

const methods: Record<string, Method> = {
  async search(ctx, model, a) {
    return (await searchRecords(ctx, model, a, ['id'])).map((r) => r.id);
  },

  async search_count(ctx, model, a) {
    const b = new SqlBuilder(modelsFor(ctx.version));
    const where = b.where(model, a.domain ?? []);
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
      throw missingError(`Record does not exist or has been deleted.\n(Record: ${model.name}(${missing.join(', ')},), User: ${ctx.uid})`);
    }
    return ids.map((id) => byId.get(id));
  },

  async read_group(ctx, model, a) {
    const lazy = a.lazy === undefined ? true : Boolean(a.lazy);
    const allGroups = parseGroupby(model, a.groupby);
    const groups = lazy ? allGroups.slice(0, 1) : allGroups;
    if (!Array.isArray(a.fields ?? [])) throw typeError(`fields must be a list, not ${pyRepr(a.fields)}`);
    const aggregates = ((a.fields ?? []) as unknown[])
      .map((f) => {
        if (typeof f !== 'string') throw valueError(`Invalid field specification ${pyRepr(f)}.`);
        return f;
      })
      .filter((f) => !groups.some((g) => g.field === f || g.spec === f) && f !== '__count')
      .map((f) => parseAggregate(model, f))
      .filter((x): x is AggregateSpec => Boolean(x));
    const rows = await groupRows(ctx, model, a.domain, groups, aggregates, { order: a.orderby, limit: a.limit, offset: a.offset });
    const domain = Array.isArray(a.domain) ? a.domain : [];
    const countKey = lazy && groups[0] ? `${groups[0].field}_count` : '__count';
    return rows.map((row) => {
      const group: Record<string, unknown> = {};
      const range: Record<string, unknown> = {};
      const conditions: unknown[] = [];
      groups.forEach((g, i) => {
        group[g.spec] = groupValue(g, row[`g${i}`], row[`n${i}`], 'read_group');
        if (g.granularity) range[g.spec] = row[`g${i}`] === null ? false : (({ from, to }) => ({ from, to }))(dateRange(String(row[`g${i}`]), g.granularity));
        conditions.push(...groupDomain(g, row[`g${i}`]));
      });
      group[countKey] = row.__count;
      aggregates.forEach((agg, i) => (group[agg.key] = aggregateValue(row[`a${i}`])));
      group.__domain = [...conditions, ...domain]; // consecutive terms are AND-ed
      if (Object.keys(range).length) group.__range = range;
      if (lazy && allGroups.length > 1) group.__context = { group_by: allGroups.slice(1).map((g) => g.spec) };
      return group;
    });
  },

  async formatted_read_group(ctx, model, a) {
    const groups = parseGroupby(model, a.groupby);
    const specs = (a.aggregates ?? []) as unknown[];
    if (!Array.isArray(specs)) throw typeError(`aggregates must be a list, not ${pyRepr(a.aggregates)}`);
    const aggregates = specs
      .filter((s) => s !== '__count')
      .map((s) => {
        if (typeof s !== 'string' || !s.includes(':')) throw valueError(`Invalid aggregate specification ${pyRepr(s)}.`);
        return { ...parseAggregate(model, s)!, key: s };
      });
    const rows = await groupRows(ctx, model, a.domain, groups, aggregates, { order: a.order, limit: a.limit, offset: a.offset });
    return rows.map((row) => {
      const group: Record<string, unknown> = {};
      const conditions: unknown[] = [];
      groups.forEach((g, i) => {
        group[g.spec] = groupValue(g, row[`g${i}`], row[`n${i}`], 'formatted');
        conditions.push(...groupDomain(g, row[`g${i}`]));
      });
      if (specs.includes('__count')) group.__count = row.__count;
      aggregates.forEach((agg, i) => (group[agg.key] = aggregateValue(row[`a${i}`])));
      group.__extra_domain = conditions;
      return group;
    });
  },

  async fields_get(ctx, model, a) {
    const wanted = Array.isArray(a.allfields) && a.allfields.length ? new Set(a.allfields as string[]) : undefined;
    const attributes = Array.isArray(a.attributes) && a.attributes.length ? (a.attributes as string[]) : undefined;
    // display_name is a computed field on every model (the record's _rec_name)
    const all: [string, FieldDef][] = [...Object.entries(model.fields), ['display_name', { type: 'char', string: 'Display Name', sql: model.recName }]];
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
          return [name, attributes ? Object.fromEntries(attributes.filter((k) => k in description).map((k) => [k, description[k]])) : description];
        }),
    );
  },

  async create(ctx, model, a) {
    const single = !Array.isArray(a.vals_list);
    const list = (single ? [a.vals_list] : a.vals_list) as unknown[];
    const ids: number[] = [];
    for (const vals of list) {
      const columns = writableValues(model, vals);
      const b = new SqlBuilder(modelsFor(ctx.version));
      const names = Object.keys(columns);
      const sql = names.length
        ? `INSERT INTO ${model.table} (${names.join(', ')}) VALUES (${names.map((n) => b.param(columns[n])).join(', ')}) RETURNING id`
        : `INSERT INTO ${model.table} DEFAULT VALUES RETURNING id`;
      ids.push((await ctx.db.query<{ id: number }>(sql, b.params)).rows[0]!.id);
    }
    return single ? ids[0] : ids;
  },

  async write(ctx, model, a) {
    const ids = idsOf(a.ids);
    const columns = writableValues(model, a.vals);
    const b = new SqlBuilder(modelsFor(ctx.version));
    const sets = Object.entries(columns).map(([name, value]) => `${name} = ${b.param(value)}`);
    sets.push("write_date = now() at time zone 'UTC'");
    const res = await ctx.db.query(`UPDATE ${model.table} SET ${sets.join(', ')} WHERE id = ANY(${b.param(ids)})`, b.params);
    if (res.rowCount !== ids.length) throw missingError(`Record does not exist or has been deleted.\n(Record: ${model.name}(${ids.join(', ')},), User: ${ctx.uid})`);
    return true;
  },

  async unlink(ctx, model, a) {
    const ids = idsOf(a.ids);
    await ctx.db.query(`DELETE FROM ${model.table} WHERE id = ANY($1)`, [ids]);
    return true;
  },
};

function writableValues(model: ModelDef, vals: unknown): Record<string, unknown> {
  if (!vals || typeof vals !== 'object' || Array.isArray(vals)) throw typeError(`vals must be a dict, not ${pyRepr(vals)}`);
  const columns: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(vals)) {
    const field = model.fields[name];
    if (!field) throw valueError(`Invalid field ${pyRepr(name)} on model ${pyRepr(model.name)}`);
    if (field.sql || field.type === 'many2many' || name === 'id') throw userError(`The field ${pyRepr(name)} of ${model.name} cannot be written through this stand-in.`);
    columns[name] = value === false && field.type !== 'boolean' ? null : value;
  }
  return columns;
}
