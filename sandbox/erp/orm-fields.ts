/**
 * Field conversion between Odoo's values and the tenant database's columns: which fields a read
 * returns and how they are selected, Odoo's `convert_to_read`, `fields_get`'s descriptions, and the
 * values a create or write may set.
 */
import { hashPassword } from './passwords.js';
import type { FieldDef, ModelDef } from './models.js';
import { pyRepr, type SqlBuilder } from './domain.js';
import { typeError, userError, valueError } from './odoo-errors.js';

export function fieldNames(model: ModelDef, fields: unknown): string[] {
  if (fields === undefined || fields === null || fields === false || (Array.isArray(fields) && fields.length === 0)) {
    return ['id', ...Object.keys(model.fields).filter((f) => f !== 'id'), 'display_name'];
  }
  if (!Array.isArray(fields) || fields.some((f) => typeof f !== 'string'))
    throw typeError(`fields must be a list of field names, not ${pyRepr(fields)}`);
  for (const f of fields as string[]) {
    if (f !== 'display_name' && !model.fields[f])
      throw valueError(`Invalid field ${pyRepr(f)} on model ${pyRepr(model.name)}`);
  }
  return ['id', ...(fields as string[]).filter((f) => f !== 'id')];
}

export function selectExpressions(b: SqlBuilder, model: ModelDef, names: string[]): string {
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
export function readValue(field: FieldDef | undefined, value: unknown, name?: unknown): unknown {
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

export function writableValues(
  model: ModelDef,
  vals: unknown,
): { columns: Record<string, unknown>; links: Record<string, unknown> } {
  if (!vals || typeof vals !== 'object' || Array.isArray(vals))
    throw typeError(`vals must be a dict, not ${pyRepr(vals)}`);
  const columns: Record<string, unknown> = {};
  const links: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(vals)) {
    // res.users: the password is stored hashed, never readable; the name lives on the partner
    if (model.name === 'res.users' && name === 'password') {
      if (typeof value !== 'string' || !value)
        throw userError('Setting empty passwords is not allowed for security reasons!');
      columns.password = hashPassword(value);
      continue;
    }
    if (model.name === 'res.users' && (name === 'name' || name === 'email')) continue;
    const field = model.fields[name];
    if (!field) throw valueError(`Invalid field ${pyRepr(name)} on model ${pyRepr(model.name)}`);
    if (field.type === 'many2many' && field.link) {
      links[name] = value;
      continue;
    }
    if (field.sql || name === 'id' || field.type === 'one2many')
      throw userError(`The field ${pyRepr(name)} of ${model.name} cannot be written through this stand-in.`);
    columns[name] = value === false && field.type !== 'boolean' ? null : value;
  }
  return { columns, links };
}
