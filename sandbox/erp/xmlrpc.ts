/**
 * Odoo's XML-RPC (`/xmlrpc/2/common`, `/xmlrpc/2/object`): every answer is HTTP 200, a method
 * response (`false` for empty values) or a fault (codes 1–4, odoo-errors.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fault as faultResponse, methodResponse, readMethodCall } from './xmlrpc-wire.js';
import { HttpError, readBody } from './http.js';
import { OdooError, accessDenied, toFault } from './odoo-errors.js';
import { checkArgs, type ErpServices } from './services.js';
import type { Route } from './tenant-databases.js';

export async function xmlrpc(
  erp: ErpServices,
  route: Route,
  service: 'common' | 'object',
  req: IncomingMessage,
  res: ServerResponse,
) {
  let reply: string;
  try {
    const { method, params } = await readMethodCall(await readBody(req));
    const result =
      service === 'common' ? await common(erp, route, method, params) : await object(erp, route, method, params);
    reply = methodResponse(result === undefined || result === null ? false : result);
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const fault = toFault(err);
    if (fault.pythonType === 'Exception') erp.log.error({ err }, 'xml-rpc call failed');
    reply = faultResponse(fault.faultCode, fault.faultString);
  }
  res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(reply);
}

function checkDb(route: Route, db: unknown) {
  if (db !== route.database) throw accessDenied();
}

async function common(erp: ErpServices, route: Route, method: string, params: unknown[]): Promise<unknown> {
  switch (method) {
    case 'version':
      return {
        server_version: `${route.version}.0`,
        server_version_info: [Number(route.version), 0, 0, 'final', 0, ''],
        server_serie: `${route.version}.0`,
        protocol_version: 1,
      };
    case 'authenticate':
    case 'login': {
      const [db, login, password] = params;
      checkDb(route, db);
      return erp.credentials.authenticate(route, login, password);
    }
    default:
      throw new OdooError(1, `Method not available ${method}`, 'NameError');
  }
}

async function object(erp: ErpServices, route: Route, method: string, params: unknown[]): Promise<unknown> {
  if (method !== 'execute_kw' && method !== 'execute')
    throw new OdooError(1, `Method not available ${method}`, 'NameError');
  const [db, uid, password, model, modelMethod, ...rest] = params;
  checkDb(route, db);
  const user = await erp.credentials.checkUser(route, uid, password);
  if (typeof model !== 'string' || typeof modelMethod !== 'string')
    throw new OdooError(1, 'execute_kw() model and method must be strings', 'TypeError');
  const args = method === 'execute_kw' ? (rest[0] ?? []) : rest;
  const kwargs = method === 'execute_kw' ? (rest[1] ?? {}) : {};
  checkArgs(args, kwargs);
  return erp.call(route, user, model, modelMethod, args as unknown[], kwargs);
}
