/**
 * The ORM methods the stand-in serves through `execute_kw`, on one tenant database: search,
 * search_count, search_read, read, read_group (17, 18, 19), formatted_read_group (19),
 * fields_get, `ir.module.module`'s `button_immediate_install` and `update_list`, and create/write/unlink for users whose groups allow writing (the platform's
 * read-only API user gets Odoo's AccessError). Results are shaped as Odoo returns them: empty
 * values are `false`, many2one values `[id, display name]`, dates `YYYY-MM-DD` strings.
 */
import type { ErpVersion } from './odoo-series.js';
import { accessError, attributeError, typeError, UnknownModelError } from './odoo-errors.js';
import { checkAccess, type Mode } from './security.js';
import { modelsFor, type Kwargs, type Method, type OrmContext } from './orm-context.js';
import { readMethods } from './orm-read.js';
import { groupMethods } from './orm-group.js';
import { writeMethods } from './orm-write.js';
import { actionMethods } from './orm-actions.js';

export { modelsFor, type OrmContext } from './orm-context.js';

/** Each method's Python signature: positional args are bound to these names, as Python does. */
const signatures: Record<
  string,
  { params: string[]; versions?: ErpVersion[]; write?: 'create' | 'write' | 'unlink'; models?: string[] }
> = {
  search: { params: ['domain', 'offset', 'limit', 'order'] },
  search_count: { params: ['domain', 'limit'] },
  search_read: { params: ['domain', 'fields', 'offset', 'limit', 'order'] },
  read: { params: ['ids', 'fields', 'load'] },
  read_group: { params: ['domain', 'fields', 'groupby', 'offset', 'limit', 'orderby', 'lazy'] },
  formatted_read_group: {
    params: ['domain', 'groupby', 'aggregates', 'having', 'offset', 'limit', 'order'],
    versions: ['19'],
  },
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

const methods: Record<string, Method> = { ...readMethods, ...groupMethods, ...writeMethods, ...actionMethods };

export async function executeKw(
  ctx: OrmContext,
  modelName: string,
  method: string,
  args: unknown[],
  kwargs: Kwargs,
): Promise<unknown> {
  const models = modelsFor(ctx.version);
  const model = models[modelName];
  if (!model || (model.module && !(await moduleInstalled(ctx, model.module)))) throw new UnknownModelError(modelName);
  if (method.startsWith('_')) throw accessError(`Private methods (such as ${method}) cannot be called remotely.`);
  const signature = signatures[method];
  if (
    !signature ||
    (signature.versions && !signature.versions.includes(ctx.version)) ||
    (signature.models && !signature.models.includes(modelName))
  ) {
    throw attributeError(`The method '${method}' does not exist on the model '${modelName}'`);
  }
  if (method !== 'fields_get') checkAccess(ctx.groups, model, (signature.write ?? 'read') as Mode);
  const bound: Kwargs = {};
  if (args.length > signature.params.length)
    throw typeError(
      `${method}() takes ${signature.params.length + 1} positional arguments but ${args.length + 1} were given`,
    );
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
  (await ctx.db.query('SELECT 1 FROM ir_module_module WHERE name = $1 AND state = $2', [name, 'installed']))
    .rowCount === 1;
