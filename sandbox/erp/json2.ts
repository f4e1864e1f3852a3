/**
 * Odoo 19's JSON-2 API: `POST /json/2/<model>/<method>` with `Authorization: bearer <api key>`
 * and `X-Odoo-Database`; the body holds the method's named parameters, `ids` for a record method
 * and `context`. 200 with the JSON result; errors are HTTP statuses (401/403/404/422/500) with
 * Odoo's error object {name, message, arguments, context, debug}.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, json, readBody } from './http.js';
import { checkApiKey } from './apikeys.js';
import { toFault, type OdooError } from './odoo-errors.js';
import type { ErpServices } from './services.js';
import type { Route } from './tenant-databases.js';

const NOT_FOUND = ['werkzeug.exceptions.NotFound', 'The requested URL was not found on the server.'] as const;

const fail = (res: ServerResponse, status: number, name: string, message: string) =>
  json(res, status, {
    name,
    message,
    arguments: [message],
    context: {},
    debug: `Traceback (most recent call last):\n${name}: ${message}\n`,
  });

export async function json2(erp: ErpServices, route: Route, path: string, req: IncomingMessage, res: ServerResponse) {
  const [, , , model, method, ...more] = path.split('/');
  if (!model || !method || more.length) return fail(res, 404, ...NOT_FOUND);
  const database = req.headers['x-odoo-database'];
  if (database !== undefined && database !== route.database) return fail(res, 404, ...NOT_FOUND);
  const bearer = /^bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
  try {
    const uid = bearer ? await erp.tenants.onTenantDb(route, (db) => checkApiKey(db, bearer)) : null;
    if (!uid) return fail(res, 401, 'odoo.exceptions.AccessDenied', 'Access Denied');
    const body = await namedParameters(req);
    if (!body) return fail(res, 400, 'werkzeug.exceptions.BadRequest', 'Invalid JSON data');
    const { ids, context: _context, ...named } = body;
    const user = await erp.credentials.rights(route, uid);
    if (model === 'res.users' && method === 'context_get')
      return json(res, 200, { lang: 'en_US', tz: 'Europe/Brussels' });
    const args = ids === undefined ? [] : [ids];
    const result = await erp.call(route, user, model, method, args, named);
    return json(res, 200, result ?? null);
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const fault = toFault(err);
    if (fault.pythonType === 'Exception') erp.log.error({ err }, 'json-2 call failed');
    return fail(res, statusOf(fault), fault.pythonType, fault.message);
  }
}

/** The body's JSON object, or undefined when it is not one. */
async function namedParameters(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  try {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as Record<string, unknown>;
    return body && typeof body === 'object' && !Array.isArray(body) ? body : undefined;
  } catch (err) {
    if (err instanceof HttpError) throw err;
    return undefined;
  }
}

/** The HTTP status JSON-2 answers a fault with: unknown model or method 404, else by fault code. */
function statusOf(fault: OdooError): number {
  const unknown =
    /^Object \S+ doesn't exist$/.test(fault.message) ||
    /^The method '.*' does not exist on the model/.test(fault.message);
  return unknown
    ? 404
    : (({ 3: 401, 4: 403, 2: 422 } as Record<number, number>)[fault.faultCode] ??
        (fault.pythonType === 'TypeError' ? 422 : 500));
}
