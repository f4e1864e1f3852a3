/**
 * Odoo's grouped reads: `read_group` (17, 18, 19) and `formatted_read_group` (19), with date
 * granularities (day … year) and aggregates (`field:fn`), answered in each method's own shape.
 */
import type { FieldDef, ModelDef } from './models.js';
import { SqlBuilder, pyRepr } from './domain.js';
import { typeError, valueError } from './odoo-errors.js';
import { int, modelsFor, scoped, type Method, type OrmContext } from './orm-context.js';
import { readValue } from './orm-fields.js';

const GRANULARITIES = ['day', 'week', 'month', 'quarter', 'year'] as const;
type Granularity = (typeof GRANULARITIES)[number];
const monthNames = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

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
  const list = typeof specs === 'string' ? [specs] : (specs ?? []);
  if (!Array.isArray(list)) throw typeError(`groupby must be a list, not ${pyRepr(specs)}`);
  return list.map((spec) => {
    if (typeof spec !== 'string') throw valueError(`Invalid groupby ${pyRepr(spec)}`);
    const [field, granularity] = spec.split(':') as [string, string | undefined];
    const def = model.fields[field];
    if (!def || def.type === 'many2many' || def.sql)
      throw valueError(`Invalid field ${pyRepr(field)} on model ${pyRepr(model.name)}`);
    const isDate = def.type === 'date' || def.type === 'datetime';
    if (granularity !== undefined && (!isDate || !GRANULARITIES.includes(granularity as Granularity)))
      throw valueError(`Invalid groupby ${pyRepr(spec)}`);
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

async function groupRows(
  ctx: OrmContext,
  model: ModelDef,
  domain: unknown,
  groups: GroupSpec[],
  aggregates: AggregateSpec[],
  opts: { order?: unknown; limit?: unknown; offset?: unknown },
) {
  const b = new SqlBuilder(modelsFor(ctx.version));
  const where = b.where(model, scoped(ctx, model, domain));
  const groupExprs = groups.map((g) =>
    g.granularity ? `date_trunc('${g.granularity}', t.${g.field})::date` : `t.${g.field}`,
  );
  const select = [
    ...groupExprs.map((e, i) => (groups[i]!.granularity ? `to_char(${e}, 'YYYY-MM-DD') AS g${i}` : `${e} AS g${i}`)),
    ...groups.map((g, i) =>
      g.def.type === 'many2one'
        ? `(SELECT ${b.column(b.models[g.def.relation!]!, b.models[g.def.relation!]!.recName, 'r')} FROM ${b.models[g.def.relation!]!.table} r WHERE r.id = ${groupExprs[i]}) AS n${i}`
        : `NULL AS n${i}`,
    ),
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
      return {
        from: day,
        to: end.toISOString().slice(0, 10),
        label: `${String(d.getUTCDate()).padStart(2, '0')} ${monthNames[d.getUTCMonth()]!.slice(0, 3)} ${y}`,
      };
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

export const groupMethods: Record<string, Method> = {
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
    const rows = await groupRows(ctx, model, a.domain, groups, aggregates, {
      order: a.orderby,
      limit: a.limit,
      offset: a.offset,
    });
    const domain = Array.isArray(a.domain) ? a.domain : [];
    const countKey = lazy && groups[0] ? `${groups[0].field}_count` : '__count';
    return rows.map((row) => {
      const group: Record<string, unknown> = {};
      const range: Record<string, unknown> = {};
      const conditions: unknown[] = [];
      groups.forEach((g, i) => {
        group[g.spec] = groupValue(g, row[`g${i}`], row[`n${i}`], 'read_group');
        if (g.granularity)
          range[g.spec] =
            row[`g${i}`] === null
              ? false
              : (({ from, to }) => ({ from, to }))(dateRange(String(row[`g${i}`]), g.granularity));
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
        if (typeof s !== 'string' || !s.includes(':'))
          throw valueError(`Invalid aggregate specification ${pyRepr(s)}.`);
        return { ...parseAggregate(model, s)!, key: s };
      });
    const rows = await groupRows(ctx, model, a.domain, groups, aggregates, {
      order: a.order,
      limit: a.limit,
      offset: a.offset,
    });
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
};
