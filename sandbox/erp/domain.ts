/**
 * Odoo search domains → parameterised SQL. A domain is a list in prefix (Polish) notation:
 * `'&'`, `'|'` take two operands, `'!'` one, consecutive terms are implicitly AND-ed; a leaf is
 * `[field, operator, value]` where field may be a path through many2one fields (`partner_id.name`).
 * Values are always bound as parameters, never written into the SQL text.
 */
import type { FieldDef, ModelDef } from './models.js';
import { valueError } from './odoo-errors.js';

const OPERATORS = new Set([
  '=',
  '!=',
  '<>',
  '<',
  '<=',
  '>',
  '>=',
  'in',
  'not in',
  'like',
  'not like',
  'ilike',
  'not ilike',
  '=like',
  '=ilike',
  '=?',
]);

/** Python's repr, for Odoo-like error messages. */
export function pyRepr(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(value))
    return value.length === 3 && typeof value[1] === 'string'
      ? `(${value.map(pyRepr).join(', ')})`
      : `[${value.map(pyRepr).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`)
      .join(', ')}}`;
  return String(value);
}

export class SqlBuilder {
  readonly params: unknown[] = [];
  private aliases = 0;
  constructor(readonly models: Record<string, ModelDef>) {}

  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  nextAlias(): string {
    return `s${++this.aliases}`;
  }

  /** The SQL expression of a field of `model` on table alias `alias`. */
  column(model: ModelDef, name: string, alias: string): string {
    const field = model.fields[name];
    if (!field) throw valueError(`Invalid field ${pyRepr(name)} on model ${pyRepr(model.name)}`);
    if (field.sql) return `(${field.sql.replace(/\bt\./g, `${alias}.`)})`;
    return `${alias}.${name}`;
  }

  /** `WHERE` condition for a whole domain. */
  where(model: ModelDef, domain: unknown, alias = 't'): string {
    if (domain === false || domain === null || domain === undefined) return 'TRUE';
    if (!Array.isArray(domain)) throw valueError(`Invalid domain: ${pyRepr(domain)}`);
    const terms = [...domain];
    let position = 0;
    const parse = (): string => {
      if (position >= terms.length) throw valueError(`Invalid domain: ${pyRepr(domain)} (missing operand)`);
      const term = terms[position++];
      if (term === '&' || term === '|') {
        const left = parse();
        const right = parse();
        return `(${left} ${term === '&' ? 'AND' : 'OR'} ${right})`;
      }
      if (term === '!') return `(NOT ${parse()})`;
      if (Array.isArray(term) && term.length === 3) return this.leaf(model, term as [unknown, unknown, unknown], alias);
      throw valueError(`Invalid leaf ${pyRepr(term)}`);
    };
    const parts: string[] = [];
    while (position < terms.length) parts.push(parse());
    return parts.length ? parts.join(' AND ') : 'TRUE';
  }

  private leaf(model: ModelDef, leaf: [unknown, unknown, unknown], alias: string): string {
    const [path, rawOperator, value] = leaf;
    // TRUE_LEAF / FALSE_LEAF
    if ((path === 1 || path === 0) && rawOperator === '=' && value === 1) return path === 1 ? 'TRUE' : 'FALSE';
    const operator = typeof rawOperator === 'string' ? rawOperator.toLowerCase() : '';
    if (typeof path !== 'string' || !OPERATORS.has(operator)) throw valueError(`Invalid leaf ${pyRepr(leaf)}`);
    if (operator === '=?') {
      if (value === false || value === null) return 'TRUE';
      return this.leaf(model, [path, '=', value], alias);
    }
    const [name, ...rest] = path.split('.');
    const field = model.fields[name!];
    if (!field) throw valueError(`Invalid field ${model.name}.${name} in leaf ${pyRepr(leaf)}`);

    if (rest.length) {
      if (field.type !== 'many2one' || !field.relation)
        throw valueError(`Invalid field ${model.name}.${path} in leaf ${pyRepr(leaf)}`);
      const comodel = this.models[field.relation]!;
      const sub = this.nextAlias();
      const inner = this.leaf(comodel, [rest.join('.'), rawOperator, value], sub);
      return `${alias}.${name} IN (SELECT ${sub}.id FROM ${comodel.table} ${sub} WHERE ${inner})`;
    }
    if (field.type === 'many2many') return this.many2manyLeaf(field, operator, value, alias, leaf);
    if (field.type === 'many2one' && typeof value === 'string' && !['in', 'not in'].includes(operator)) {
      // Odoo matches a many2one against a string by the related record's name
      const comodel = this.models[field.relation!]!;
      const sub = this.nextAlias();
      const negative = operator === '!=' || operator === '<>' || operator.startsWith('not ');
      const positive = negative
        ? ({ '!=': '=', '<>': '=', 'not like': 'like', 'not ilike': 'ilike' }[operator] ?? operator)
        : operator;
      const inner = this.leaf(comodel, [comodel.recName, positive, value], sub);
      const match = `${alias}.${name} IN (SELECT ${sub}.id FROM ${comodel.table} ${sub} WHERE ${inner})`;
      return negative ? `(${alias}.${name} IS NULL OR NOT ${match})` : match;
    }
    return this.comparison(model, name!, field, operator, value, alias, leaf);
  }

  private comparison(
    model: ModelDef,
    name: string,
    field: FieldDef,
    operator: string,
    value: unknown,
    alias: string,
    leaf: unknown,
  ): string {
    const col = this.column(model, name, alias);
    const isEmpty = value === false || value === null;
    switch (operator) {
      case '=':
        if (isEmpty) return field.type === 'boolean' ? `(${col} IS NULL OR ${col} = false)` : `${col} IS NULL`;
        return `${col} = ${this.param(this.scalar(field, value, leaf))}`;
      case '!=':
      case '<>':
        if (isEmpty) return field.type === 'boolean' ? `${col} = true` : `${col} IS NOT NULL`;
        if (field.type === 'boolean' && value === true) return `(${col} IS NULL OR ${col} = false)`;
        return `(${col} != ${this.param(this.scalar(field, value, leaf))} OR ${col} IS NULL)`;
      case '<':
      case '<=':
      case '>':
      case '>=':
        if (isEmpty) return 'FALSE';
        return `${col} ${operator} ${this.param(this.scalar(field, value, leaf))}`;
      case 'in':
      case 'not in': {
        const list = Array.isArray(value) ? value : [value];
        if (field.type === 'boolean') {
          // Odoo (expression.py): False stands for false and NULL alike
          const wanted = [true, false].filter((b) => list.includes(b) || (b === false && list.includes(null)));
          const cond =
            wanted.length === 2
              ? 'TRUE'
              : wanted[0] === true
                ? `${col} = true`
                : wanted.length
                  ? `(${col} IS NULL OR ${col} = false)`
                  : 'FALSE';
          return operator === 'in' ? cond : `NOT (${cond})`;
        }
        const present = list.filter((v) => v !== false && v !== null).map((v) => this.scalar(field, v, leaf));
        const withNull = list.length !== present.length;
        if (operator === 'in') {
          const parts = [
            present.length ? `${col} = ANY(${this.param(present)})` : 'FALSE',
            ...(withNull ? [`${col} IS NULL`] : []),
          ];
          return `(${parts.join(' OR ')})`;
        }
        const parts = [
          present.length ? `${col} != ALL(${this.param(present)})` : 'TRUE',
          ...(withNull ? [`${col} IS NOT NULL`] : []),
        ];
        return withNull ? `(${parts.join(' AND ')})` : `(${parts[0]} OR ${col} IS NULL)`;
      }
      default: {
        // like, ilike, =like, =ilike and their negations
        const negative = operator.startsWith('not ');
        const base = negative ? operator.slice(4) : operator;
        const exact = base.startsWith('=');
        const sqlOp = base.endsWith('ilike') ? 'ILIKE' : 'LIKE';
        if (isEmpty) return negative ? `${col} IS NOT NULL` : `${col} IS NULL`;
        // like Odoo, wildcards in the value are not escaped: `a_b` also matches `axb`
        const pattern = exact ? String(value) : `%${String(value)}%`;
        const match = `${col}::text ${sqlOp} ${this.param(pattern)}`;
        return negative ? `(NOT (${match}) OR ${col} IS NULL)` : match;
      }
    }
  }

  private many2manyLeaf(field: FieldDef, operator: string, value: unknown, alias: string, leaf: unknown): string {
    const link = field.link!;
    const ids = (Array.isArray(value) ? value : [value]).filter((v) => typeof v === 'number');
    const exists = (cond: string) =>
      `EXISTS (SELECT 1 FROM ${link.table} l WHERE l.${link.column} = ${alias}.id${cond})`;
    if (operator === '=' && (value === false || value === null)) return `NOT ${exists('')}`;
    if ((operator === '!=' || operator === '<>') && (value === false || value === null)) return exists('');
    if (operator === 'in' || operator === '=') return exists(` AND l.${link.other} = ANY(${this.param(ids)})`);
    if (operator === 'not in' || operator === '!=' || operator === '<>')
      return `NOT ${exists(` AND l.${link.other} = ANY(${this.param(ids)})`)}`;
    throw valueError(`Invalid leaf ${pyRepr(leaf)}`);
  }

  private scalar(field: FieldDef, value: unknown, leaf: unknown): unknown {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
    throw valueError(`Invalid value ${pyRepr(value)} in leaf ${pyRepr(leaf)} for field of type ${field.type}`);
  }

  /** `ORDER BY` from an Odoo order spec such as `"invoice_date_due asc, id desc"`. */
  orderBy(model: ModelDef, order: string, alias = 't'): string {
    const parts = order
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    return parts
      .map((part) => {
        const match = /^("?)([a-z0-9_]+)\1(?:\s+(asc|desc))?(?:\s+nulls\s+(first|last))?$/i.exec(part);
        if (!match)
          throw valueError(
            `Invalid "order" specified (${order}). A valid "order" specification is a comma-separated list of valid field names (optionally followed by asc/desc for the direction)`,
          );
        const name = match[2]!;
        const field = model.fields[name];
        if (!field || field.type === 'many2many')
          throw valueError(
            `Invalid "order" specified (${order}). A valid "order" specification is a comma-separated list of valid field names (optionally followed by asc/desc for the direction)`,
          );
        const direction = (match[3] ?? 'asc').toUpperCase();
        const nulls = match[4] ? ` NULLS ${match[4].toUpperCase()}` : '';
        return `${this.column(model, name, alias)} ${direction}${nulls}`;
      })
      .join(', ');
  }
}
