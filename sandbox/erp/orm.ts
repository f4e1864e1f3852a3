/**
 * The ORM methods the stand-in serves through `execute_kw`, on one tenant database: search,
 * search_count, search_read, read, read_group (17, 18, 19), formatted_read_group (19),
 * fields_get, `ir.module.module`'s `button_immediate_install` and `update_list`, and create/write/unlink for users whose groups allow writing (the platform's
 * read-only API user gets Odoo's AccessError). Results are shaped as Odoo returns them: empty
 * values are `false`, many2one values `[id, display name]`, dates `YYYY-MM-DD` strings.
 */
import type pg from 'pg';
import type { ErpVersion } from '../../domain/tenants/types.js';
import { odooModels, registerModelSql, type FieldDef, type ModelDef } from './models.js';
import { SqlBuilder, pyRepr } from './domain.js';
import { accessError, attributeError, missingError, typeError, userError, validationError, valueError } from './odoo-errors.js';
import { checkAccess, companyRule, type Mode } from './security.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { CATALOGUE_MODULES } from '../../domain/billing/tiers.js';

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

type Kwargs = Record<string, unknown>;
type Method = (ctx: OrmContext, model: ModelDef, a: Kwargs) => Promise<unknown>;

/** Each method's Python signature: positional args are bound to these names, as Python does. */
const signatures: Record<string, { params: string[]; versions?: ErpVersion[]; write?: 'create' | 'write' | 'unlink'; models?: string[] }> = {
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
  // ir.module.module's buttons, as the Apps screen (and a platform tier change) calls them
  button_immediate_install: { params: ['ids'], write: 'write', models: ['ir.module.module'] },
  update_list: { params: [], write: 'write', models: ['ir.module.module'] },
  // the Confirm button of an invoice
  action_post: { params: ['ids'], write: 'write', models: ['account.move'] },
};

/** Odoo's `_sql_constraints` messages, by constraint name: a violation is their ValidationError. */
const UNIQUE_MESSAGES: Record<string, string> = {
  account_bank_statement_line_unique_import_id: 'A bank account transactions can be imported only once!',
};

/** What Odoo's field defaults and related fields fill in when a record of these models is created. */
async function createDefaults(ctx: OrmContext, model: ModelDef, columns: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (model.name !== 'account.bank.statement.line') return {};
  // company_id is related to the journal's company (journal_id is required, checked before)
  const journal = await ctx.db.query<{ company_id: number | null }>('SELECT company_id FROM account_journal WHERE id = $1', [columns.journal_id]);
  if (!journal.rows[0]) throw missingError(`Record does not exist or has been deleted.
(Record: account.journal(${pyRepr(columns.journal_id)},), User: ${ctx.uid})`);
  return {
    company_id: journal.rows[0].company_id,
    is_reconciled: false,
    amount_residual: columns.amount,
    internal_index: `${String(columns.date).replace(/-/g, '')}${Date.now()}`,
  };
}
/**
 * An invoice created with lines (`invoice_line_ids: [[0, 0, {quantity, price_unit}]]`, no taxes):
 * the stand-in keeps the totals Odoo computes from them, a draft with number "/".
 */
function invoiceDefaults(raw: unknown): unknown {
  const { invoice_line_ids: lines, ...vals } = (raw ?? {}) as Record<string, unknown>;
  if (!Array.isArray(lines)) return raw;
  const total = lines.reduce((sum: number, cmd) => {
    const line = Array.isArray(cmd) && cmd[0] === 0 ? (cmd[2] as { quantity?: number; price_unit?: number }) : undefined;
    return sum + (line ? (line.quantity ?? 1) * (line.price_unit ?? 0) : 0);
  }, 0);
  const sign = vals.move_type === 'out_refund' ? -1 : 1;
  return {
    name: '/',
    state: 'draft',
    payment_state: 'not_paid',
    amount_untaxed: total,
    amount_tax: 0,
    amount_total: total,
    amount_residual: total,
    amount_untaxed_signed: sign * total,
    amount_total_signed: sign * total,
    amount_residual_signed: sign * total,
    ...vals,
  };
}

const modelsByVersion = new Map<ErpVersion, Record<string, ModelDef>>();
export const modelsFor = (version: ErpVersion) => {
  let models = modelsByVersion.get(version);
  if (!models) modelsByVersion.set(version, (models = odooModels(version)));
  return models;
};

export async function executeKw(ctx: OrmContext, modelName: string, method: string, args: unknown[], kwargs: Kwargs): Promise<unknown> {
  const models = modelsFor(ctx.version);
  const model = models[modelName];
  if (!model || (model.module && !(await moduleInstalled(ctx, model.module)))) throw userError(`Object ${modelName} doesn't exist`);
  if (method.startsWith('_')) throw accessError(`Private methods (such as ${method}) cannot be called remotely.`);
  const signature = signatures[method];
  if (!signature || (signature.versions && !signature.versions.includes(ctx.version)) || (signature.models && !signature.models.includes(modelName))) {
    throw attributeError(`The method '${method}' does not exist on the model '${modelName}'`);
  }
  if (method !== 'fields_get') checkAccess(ctx.groups, model, (signature.write ?? 'read') as Mode);
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

const moduleInstalled = async (ctx: OrmContext, name: string) =>
  (await ctx.db.query('SELECT 1 FROM ir_module_module WHERE name = $1 AND state = $2', [name, 'installed'])).rowCount === 1;

/** The caller's domain restricted by the model's record rules (the multi-company rule). */
function scoped(ctx: OrmContext, model: ModelDef, domain: unknown): unknown {
  const rule = companyRule(model, ctx.companyIds);
  if (!rule.length) return domain ?? [];
  if (domain === undefined || domain === null || domain === false) return rule;
  return Array.isArray(domain) ? [...rule, ...domain] : domain; // a malformed domain keeps its own fault
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
        case 'one2many':
          return `ARRAY(SELECT o.id FROM ${b.models[field.relation!]!.table} o WHERE o.${field.inverse!} = t.id ORDER BY 1) AS c${i}`;
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
    case 'one2many':
      return value ?? [];
    default:
      return value ?? false;
  }
}

async function searchRecords(ctx: OrmContext, model: ModelDef, a: Kwargs, fields: string[]): Promise<Record<string, unknown>[]> {
  const b = new SqlBuilder(modelsFor(ctx.version));
  const where = b.where(model, scoped(ctx, model, a.domain));
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
  const where = b.where(model, scoped(ctx, model, domain));
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
    // one transaction for the whole vals_list, as Odoo's create: all records or none
    const client = await (ctx.db as pg.Pool).connect();
    const tx: OrmContext = { ...ctx, db: client };
    try {
      await client.query('BEGIN');
      for (const raw of list) {
        const vals = model.name === 'res.users' ? await userDefaults(tx, raw) : model.name === 'account.move' ? invoiceDefaults(raw) : raw;
        const { columns, links } = writableValues(model, vals);
        if (model.name === 'res.users') columns.partner_id ??= await createUserPartner(tx, vals as Record<string, unknown>);
        for (const [name, field] of Object.entries(model.fields)) {
          if (field.required && !field.sql && (columns[name] === undefined || columns[name] === null)) throw mandatoryField(model, name);
        }
        const row = { ...(await createDefaults(tx, model, columns)), ...columns };
        // base_automation computes an automation action's name from its type (ir_actions_server.py)
        if (model.name === 'ir.actions.server' && row.usage === 'base_automation' && row.state === 'webhook') row.name = 'Send Webhook Notification';
        if (model.name === 'base.automation') row.active ??= true;
        const b = new SqlBuilder(modelsFor(ctx.version));
        const names = Object.keys(row);
        const sql = names.length
          ? `INSERT INTO ${model.table} (${names.join(', ')}) VALUES (${names.map((n) => b.param(row[n])).join(', ')}) RETURNING id`
          : `INSERT INTO ${model.table} DEFAULT VALUES RETURNING id`;
        const id = (await client.query<{ id: number }>(sql, b.params)).rows[0]!.id;
        await applyLinks(tx, model, [id], links);
        if (model.name === 'res.users') await checkUserCompanies(tx, id);
        ids.push(id);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      const pgErr = err as { code?: string; constraint?: string };
      const message = pgErr.code === '23505' && pgErr.constraint ? UNIQUE_MESSAGES[pgErr.constraint] : undefined;
      if (message) throw validationError(message);
      throw err;
    } finally {
      client.release();
    }
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
    const client = await (ctx.db as pg.Pool).connect();
    const tx: OrmContext = { ...ctx, db: client };
    try {
      await client.query('BEGIN');
      const res = await client.query(`UPDATE ${model.table} t SET ${sets.join(', ')} WHERE id = ANY(${b.param(ids)}) AND ${visible}`, b.params);
      if (res.rowCount !== ids.length) throw missingError(`Record does not exist or has been deleted.\n(Record: ${model.name}(${ids.join(', ')},), User: ${ctx.uid})`);
      await applyLinks(tx, model, ids, links);
      if (model.name === 'res.users') {
        // res.users inherits res.partner: its name is written on the partner
        const name = (a.vals as Record<string, unknown>).name;
        if (typeof name === 'string' && name) {
          await client.query('UPDATE res_partner SET name = $1, complete_name = $1 WHERE id IN (SELECT partner_id FROM res_users WHERE id = ANY($2))', [name, ids]);
        }
        for (const id of ids) await checkUserCompanies(tx, id);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
    return true;
  },

  /**
   * Odoo's `action_post` (the Confirm button): a draft invoice gets its number (INV/<year>/<n>) and
   * is posted; anything but a draft is Odoo's UserError.
   */
  async action_post(ctx, model, a) {
    const ids = idsOf(a.ids);
    const { rows } = await ctx.db.query<{ id: number; state: string }>('SELECT id, state FROM account_move WHERE id = ANY($1)', [ids]);
    const notDraft = rows.find((r) => r.state !== 'draft');
    if (notDraft) throw userError(`The entry (id ${notDraft.id}) is already posted.`);
    if (rows.length !== ids.length) throw missingError(`Record does not exist or has been deleted.\n(Record: ${model.name}(${ids.join(', ')},), User: ${ctx.uid})`);
    await ctx.db.query(
      `UPDATE account_move m SET state = 'posted', write_date = now() at time zone 'UTC',
              name = CASE WHEN m.name IS NULL OR m.name = '/' THEN 'INV/' || extract(year FROM coalesce(m.invoice_date, current_date)) || '/' ||
                lpad((SELECT count(*) + 1 FROM account_move p WHERE p.state = 'posted' AND p.move_type = m.move_type)::text, 5, '0') ELSE m.name END
        WHERE id = ANY($1)`,
      [ids],
    );
    return true;
  },

  /**
   * Odoo's `button_immediate_install`: installs the modules now (the stand-in has no code to load,
   * so the state is what changes) and answers the client action that reloads the web client.
   * Installed modules stay as they are; an uninstallable one is Odoo's UserError.
   */
  async button_immediate_install(ctx, model, a) {
    const ids = idsOf(a.ids);
    const { rows } = await ctx.db.query<{ id: number; name: string; state: string }>('SELECT id, name, state FROM ir_module_module WHERE id = ANY($1)', [ids]);
    const missing = ids.filter((id) => !rows.some((r) => r.id === id));
    if (missing.length) throw missingError(`Record does not exist or has been deleted.\n(Record: ${model.name}(${missing.join(', ')},), User: ${ctx.uid})`);
    const uninstallable = rows.find((r) => r.state === 'uninstallable');
    if (uninstallable) throw userError(`You try to install module "${uninstallable.name}" that depends on module "${uninstallable.name}".\nBut the latter module is not available in your system.`);
    await ctx.db.query(
      `UPDATE ir_module_module SET state = 'installed', latest_version = coalesce(latest_version, $2), write_date = now() at time zone 'UTC'
        WHERE id = ANY($1) AND state IN ('uninstalled', 'to install', 'to upgrade')`,
      [ids, `${ctx.version}.0.1.0`],
    );
    // the models the installed modules bring now exist (ir.model, ir.model.fields)
    for (const m of Object.values(modelsFor(ctx.version))) {
      if (m.module && rows.some((r) => r.name === m.module)) await ctx.db.query(registerModelSql(m));
    }
    return { type: 'ir.actions.client', tag: 'reload', params: { menu_id: false } };
  },

  /** Odoo's `update_list`: modules of the addons path (here: the catalogue) that the database does not list yet are added, not installed. */
  async update_list(ctx) {
    const { rows } = await ctx.db.query<{ name: string }>('SELECT name FROM ir_module_module');
    const known = new Set(rows.map((r) => r.name));
    const added = CATALOGUE_MODULES.filter((mod) => !known.has(mod.name));
    for (const mod of added) {
      await ctx.db.query(`INSERT INTO ir_module_module (name, shortdesc, state, application, sequence) VALUES ($1, $2, 'uninstalled', $3, 100)`, [mod.name, mod.title, mod.application]);
    }
    return [0, added.length];
  },

  async unlink(ctx, model, a) {
    const ids = idsOf(a.ids);
    const b = new SqlBuilder(modelsFor(ctx.version));
    const visible = b.where(model, scoped(ctx, model, []));
    await ctx.db.query(`DELETE FROM ${model.table} t WHERE id = ANY(${b.param(ids)}) AND ${visible}`, b.params);
    return true;
  },
};

/** Odoo's message for a NOT NULL violation (odoo/service/model.py), a ValidationError: fault 2. */
const mandatoryField = (model: ModelDef, name: string) =>
  validationError(
    'The operation cannot be completed:\n- Create/update: a mandatory field is not set.\n- Delete: another model requires the record being deleted. If possible, archive it instead.\n\n' +
      `Model: ${model.description} (${model.name})\nField: ${model.fields[name]?.string ?? name} (${name})\n`,
  );

/** res.users defaults as Odoo sets them: the creator's company, that company as the only allowed one, internal user. */
async function userDefaults(ctx: OrmContext, vals: unknown): Promise<unknown> {
  if (!vals || typeof vals !== 'object' || Array.isArray(vals)) return vals;
  const v = { ...(vals as Record<string, unknown>) };
  const groupsField = ctx.version === '19' ? 'group_ids' : 'groups_id';
  v.active ??= true;
  v.share ??= false; // computed in Odoo: not an internal user → share
  v.company_id ??= ctx.companyIds[0] ?? false;
  v.company_ids ??= v.company_id ? [[6, 0, [v.company_id]]] : [];
  if (v[groupsField] === undefined) {
    const user = await xmlidRecord(ctx, 'base', 'group_user');
    v[groupsField] = user ? [[6, 0, [user]]] : [];
  }
  return v;
}

async function xmlidRecord(ctx: OrmContext, module: string, name: string): Promise<number | undefined> {
  const res = await ctx.db.query<{ res_id: number }>('SELECT res_id FROM ir_model_data WHERE module = $1 AND name = $2', [module, name]);
  return res.rows[0]?.res_id;
}

/** res.users inherits res.partner: a new user without partner gets one named after it. */
async function createUserPartner(ctx: OrmContext, vals: Record<string, unknown>): Promise<number> {
  const name = vals.name;
  if (typeof name !== 'string' || !name) throw mandatoryField(modelsFor(ctx.version)['res.users']!, 'name');
  const email = typeof vals.email === 'string' ? vals.email : typeof vals.login === 'string' && vals.login.includes('@') ? vals.login : null;
  const res = await ctx.db.query<{ id: number }>(
    `INSERT INTO res_partner (name, complete_name, email, is_company, active, customer_rank, supplier_rank, company_id)
     VALUES ($1, $1, $2, false, true, 0, 0, $3) RETURNING id`,
    [name, email, typeof vals.company_id === 'number' ? vals.company_id : null],
  );
  return res.rows[0]!.id;
}

/** Odoo's constraint: a user's main company is one of its allowed companies. */
async function checkUserCompanies(ctx: OrmContext, uid: number): Promise<void> {
  const res = await ctx.db.query<{ ok: boolean; login: string; company: string | null }>(
    `SELECT u.login, c.name AS company,
            EXISTS (SELECT 1 FROM res_company_users_rel r WHERE r.user_id = u.id AND r.cid = u.company_id) AS ok
       FROM res_users u LEFT JOIN res_company c ON c.id = u.company_id WHERE u.id = $1`,
    [uid],
  );
  const row = res.rows[0];
  if (row && !row.ok) throw validationError(`Company ${row.company ?? '?'} is not in the allowed companies for user ${row.login} (${row.company ?? '?'}).`);
}

/**
 * The x2many commands Odoo accepts for a many2many: `[6, 0, ids]` replace, `[4, id]` link,
 * `[3, id]` unlink, `[5]` clear; a plain list of ids is a replace, as in Odoo.
 */
async function applyLinks(ctx: OrmContext, model: ModelDef, ids: number[], links: Record<string, unknown>): Promise<void> {
  for (const [name, value] of Object.entries(links)) {
    const link = model.fields[name]!.link!;
    const commands = Array.isArray(value) && value.every((v) => typeof v === 'number') ? [[6, 0, value]] : (value as unknown[]);
    if (!Array.isArray(commands)) throw valueError(`Invalid value ${pyRepr(value)} for the many2many field ${pyRepr(name)}`);
    for (const command of commands) {
      if (!Array.isArray(command) || typeof command[0] !== 'number') throw valueError(`Invalid x2many command ${pyRepr(command)} for ${pyRepr(name)}`);
      const [op, arg, list] = command as [number, unknown, unknown];
      const ofIds = (v: unknown) => idsOf(v ?? []);
      for (const id of ids) {
        if (op === 6 || op === 5) await ctx.db.query(`DELETE FROM ${link.table} WHERE ${link.column} = $1`, [id]);
        const add = op === 6 ? ofIds(list) : op === 4 ? ofIds(arg) : [];
        for (const other of add) {
          await ctx.db.query(`INSERT INTO ${link.table} (${link.column}, ${link.other}) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [id, other]);
        }
        if (op === 3) await ctx.db.query(`DELETE FROM ${link.table} WHERE ${link.column} = $1 AND ${link.other} = ANY($2)`, [id, ofIds(arg)]);
        if (![3, 4, 5, 6].includes(op)) throw valueError(`The x2many command ${op} is not served by this stand-in`);
      }
    }
  }
}

function writableValues(model: ModelDef, vals: unknown): { columns: Record<string, unknown>; links: Record<string, unknown> } {
  if (!vals || typeof vals !== 'object' || Array.isArray(vals)) throw typeError(`vals must be a dict, not ${pyRepr(vals)}`);
  const columns: Record<string, unknown> = {};
  const links: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(vals)) {
    // res.users: the password is stored hashed, never readable; the name lives on the partner
    if (model.name === 'res.users' && name === 'password') {
      if (typeof value !== 'string' || !value) throw userError('Setting empty passwords is not allowed for security reasons!');
      columns.password = hashOdooPassword(value);
      continue;
    }
    if (model.name === 'res.users' && (name === 'name' || name === 'email')) continue;
    const field = model.fields[name];
    if (!field) throw valueError(`Invalid field ${pyRepr(name)} on model ${pyRepr(model.name)}`);
    if (field.type === 'many2many' && field.link) {
      links[name] = value;
      continue;
    }
    if (field.sql || name === 'id' || field.type === 'one2many') throw userError(`The field ${pyRepr(name)} of ${model.name} cannot be written through this stand-in.`);
    columns[name] = value === false && field.type !== 'boolean' ? null : value;
  }
  return { columns, links };
}
