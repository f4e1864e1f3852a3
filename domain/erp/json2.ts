/**
 * The platform's JSON-2 client for a tenant ERP on Odoo 19+ (`POST /json/2/<model>/<method>`,
 * `Authorization: bearer <API key>`, `X-Odoo-Database`), behind the same `ErpClient` interface as
 * the XML-RPC client: `executeKw(model, method, args, kwargs)` binds the positional `args` to the
 * method's parameter names (JSON-2 takes named parameters only; `ids` for a record method) from a
 * small table of the methods the platform calls. The key is checked on every call (a pbkdf2 of
 * 6,000 rounds on Odoo's side, where a password in XML-RPC costs 600,000). Errors become the
 * XML-RPC client's: 401 → ErpFault 3, 403 → 4, 422 → 2, any other → 1; transport failures and a
 * host without a route → ErpUnreachable.
 */
import { ErpFault, ErpUnreachable, post, xmlRpcCall, type ErpClient } from './client.js';

export interface Json2ClientOptions {
  baseUrl: string;
  host: string;
  db: string;
  /** The key's user (ErpClient.authenticate looks its id up). */
  login: string;
  apiKey: string;
  timeoutMs?: number;
}

/** Positional parameter names (after `self`) of the model methods the platform calls. */
const PARAMS: Record<string, string[]> = {
  search: ['domain', 'offset', 'limit', 'order'],
  search_count: ['domain', 'limit'],
  search_read: ['domain', 'fields', 'offset', 'limit', 'order'],
  read_group: ['domain', 'fields', 'groupby', 'offset', 'limit', 'orderby', 'lazy'],
  formatted_read_group: ['domain', 'groupby', 'aggregates', 'having', 'offset', 'limit', 'order'],
  fields_get: ['allfields', 'attributes'],
  create: ['vals_list'],
  get_param: ['key', 'default'],
  context_get: [],
  update_list: [],
};
/** Record methods: the first positional argument is `ids`, then these. */
const RECORD_PARAMS: Record<string, string[]> = {
  read: ['fields', 'load'],
  write: ['vals'],
  unlink: [],
  button_immediate_install: [],
};

/** `args` + `kwargs` of an XML-RPC style call as JSON-2's named body. */
export function json2Body(method: string, args: unknown[], kwargs: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  let names = PARAMS[method];
  let rest = args;
  if (!names && RECORD_PARAMS[method]) {
    names = RECORD_PARAMS[method];
    if (args.length) {
      body.ids = args[0];
      rest = args.slice(1);
    }
  }
  if (!names) {
    if (args.length) throw new Error(`JSON-2: the parameter names of ${method} are not known; pass them as kwargs`);
    names = [];
  }
  if (rest.length > names.length)
    throw new Error(`JSON-2: ${method} takes ${names.length} positional parameters, ${rest.length} given`);
  rest.forEach((value, i) => (body[names![i]!] = value));
  for (const [k, v] of Object.entries(kwargs)) {
    if (k in body) throw new Error(`JSON-2: ${method} got ${k} both positionally and by name`);
    body[k] = v;
  }
  return body;
}

/** An Odoo JSON-2 error answer as the fault XML-RPC would have sent. */
function faultOf(status: number, error: { name?: unknown; message?: unknown }): ErpFault {
  const message = typeof error.message === 'string' ? error.message : `HTTP ${status}`;
  const code = status === 401 ? 3 : status === 403 ? 4 : status === 422 ? 2 : 1;
  return new ErpFault(
    code,
    code === 1 ? `${typeof error.name === 'string' ? error.name : 'Exception'}: ${message}` : message,
  );
}

export function createJson2Client(opts: Json2ClientOptions): ErpClient {
  let uid: Promise<number> | undefined;
  const call = async (model: string, method: string, body: Record<string, unknown>): Promise<unknown> => {
    const answer = await post(
      opts,
      `/json/2/${encodeURIComponent(model)}/${encodeURIComponent(method)}`,
      { 'content-type': 'application/json', authorization: `bearer ${opts.apiKey}`, 'x-odoo-database': opts.db },
      JSON.stringify(body),
      true,
    ).catch((err: unknown) => {
      // a 404 that is not Odoo's JSON error: no tenant there, or an Odoo before 19 (no JSON-2)
      if (err instanceof ErpUnreachable && err.reason === 'no-route')
        throw new ErpUnreachable(
          'no-route',
          `The ERP has no JSON-2 endpoint for ${opts.host} (no such tenant, or Odoo before 19)`,
        );
      throw err;
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.body.toString('utf8'));
    } catch {
      throw new ErpUnreachable('bad-answer', `The ERP of ${opts.host} answered HTTP ${answer.status} without JSON`);
    }
    if (answer.status === 200) return parsed;
    if (parsed && typeof parsed === 'object' && 'message' in parsed)
      throw faultOf(answer.status, parsed as { name?: unknown; message?: unknown });
    throw new ErpUnreachable('bad-answer', `The ERP of ${opts.host} answered HTTP ${answer.status}`);
  };

  return {
    /**
     * The key's user: JSON-2 has no login step (every call carries the key), so this asks the ERP
     * for the id of `login`, which proves the key and the tenant database in one call.
     */
    authenticate() {
      uid ??= call('res.users', 'search', { domain: [['login', '=', opts.login]], limit: 1 }).then((ids) => {
        const id = Array.isArray(ids) ? ids[0] : undefined;
        if (typeof id !== 'number') throw new ErpFault(3, 'Access Denied');
        return id;
      });
      uid.catch(() => (uid = undefined));
      return uid;
    },
    async executeKw<T>(model: string, method: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}) {
      return (await call(model, method, json2Body(method, args, kwargs))) as T;
    },
    async version() {
      return (await xmlRpcCall(opts, '/xmlrpc/2/common', 'version', [])) as Record<string, unknown>;
    },
  };
}
