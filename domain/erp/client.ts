/**
 * The platform's clients for a tenant ERP (Odoo's external APIs), both behind `ErpClient`:
 *
 * - XML-RPC (`createErpClient`): `authenticate` on `/xmlrpc/2/common` (uid cached), `execute_kw`
 *   on `/xmlrpc/2/object`, on the wire with the `xmlrpc` package's serializer and (sax-based)
 *   deserializer;
 * - JSON-2 on Odoo 19+ (`createJson2Client`), described where it starts below.
 *
 * Requests go to ERP_URL with the tenant hostname as `Host` (node:http; fetch would drop it).
 * Faults become `ErpFault`; transport failures become `ErpUnreachable` with what went wrong in the
 * ERP's own terms (no route for the host, not reachable, too slow, an answer that is not XML-RPC).
 * What either means to a caller of the platform (a 404, a 503, …) is decided by the operation that
 * used the client.
 */
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { PassThrough } from 'node:stream';

// ---- XML-RPC on the wire ----

const require = createRequire(import.meta.url);

interface XmlRpcDeserializer {
  deserializeMethodCall(
    stream: NodeJS.ReadableStream,
    cb: (err: Error | null, method?: string, params?: unknown[]) => void,
  ): void;
  deserializeMethodResponse(
    stream: NodeJS.ReadableStream,
    cb: (err: (Error & { faultCode?: unknown; faultString?: unknown }) | null, value?: unknown) => void,
  ): void;
}
const serializer = require('xmlrpc/lib/serializer.js') as {
  serializeMethodCall(method: string, params: unknown[]): string;
  serializeMethodResponse(value: unknown): string;
  serializeFault(fault: { faultCode: number; faultString: string }): string;
};
const Deserializer = require('xmlrpc/lib/deserializer.js') as new (encoding?: string) => XmlRpcDeserializer;

/** An XML-RPC fault as received: Odoo's codes are 1 (application error), 2 (warning / user error), 3 (access denied), 4 (access error). */
export class XmlRpcFault extends Error {
  override name = 'XmlRpcFault';
  constructor(
    readonly faultCode: number,
    readonly faultString: string,
  ) {
    super(faultString);
  }
}

const streamOf = (body: Buffer | string) => {
  const stream = new PassThrough();
  stream.end(body);
  return stream;
};

export const serializeMethodCall = (method: string, params: unknown[]) =>
  serializer.serializeMethodCall(method, params);
export const serializeMethodResponse = (value: unknown) => serializer.serializeMethodResponse(value);
export const serializeFault = (faultCode: number, faultString: string) =>
  serializer.serializeFault({ faultCode, faultString });

export function parseMethodCall(body: Buffer | string): Promise<{ method: string; params: unknown[] }> {
  return new Promise((resolve, reject) => {
    new Deserializer().deserializeMethodCall(streamOf(body), (err, method, params) =>
      err ? reject(err) : resolve({ method: method!, params: params ?? [] }),
    );
  });
}

/** The response's value; rejects with XmlRpcFault for a fault, with an Error for anything malformed. */
export function parseMethodResponse(body: Buffer | string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    new Deserializer().deserializeMethodResponse(streamOf(body), (err, value) => {
      if (!err) return resolve(value);
      if (err.faultCode !== undefined)
        return reject(new XmlRpcFault(Number(err.faultCode), String(err.faultString ?? '')));
      reject(err);
    });
  });
}

// ---- the XML-RPC client ----

/** An Odoo fault: 1 application error, 2 user error / warning, 3 access denied, 4 access error. */
export class ErpFault extends Error {
  override name = 'ErpFault';
  constructor(
    readonly code: number,
    readonly faultString: string,
  ) {
    super(code === 1 ? pythonExceptionMessage(faultString) : faultString);
  }
}

/**
 * What a Python traceback (an application fault's faultString) says went wrong: the exception line
 * after the last traceback's frames (`psycopg2.errors.UndefinedColumn: column "demo" does not
 * exist`), with the lines of a multi-line message, but without PostgreSQL's position markers
 * (a line of `^`). A faultString without frames is the exception itself.
 */
export function pythonExceptionMessage(faultString: string): string {
  const lines = faultString.trim().split('\n');
  let from = 0;
  lines.forEach((line, i) => {
    if (line.startsWith('Traceback (most recent call last):')) from = i + 1;
  });
  const frames = lines.slice(from);
  const start = frames.findIndex((line) => !/^\s/.test(line));
  const message = (start === -1 ? frames : frames.slice(start))
    .filter((line) => !/^\s*\^+\s*$/.test(line))
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ');
  return message || faultString;
}

/** Why the ERP could not be asked: no route for the tenant's host, down, too slow, or a broken answer. */
export type ErpUnreachableReason = 'no-route' | 'down' | 'timeout' | 'bad-answer';

export class ErpUnreachable extends Error {
  override name = 'ErpUnreachable';
  constructor(
    readonly reason: ErpUnreachableReason,
    message: string,
  ) {
    super(message);
  }
}

export interface ErpClientOptions {
  baseUrl: string;
  host: string;
  db: string;
  login: string;
  password: string;
  /** Per call; Odoo's own limit for one request is 60 s (§8). */
  timeoutMs?: number;
}

export interface ErpClient {
  authenticate(): Promise<number>;
  executeKw<T = unknown>(model: string, method: string, args?: unknown[], kwargs?: Record<string, unknown>): Promise<T>;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * One POST to the ERP at `baseUrl` for tenant `host`; transport failures become ErpUnreachable, and
 * so do 404 (no route) and 502–504 unless `json404` (JSON-2: a 404 with a JSON body is Odoo's own).
 */
export function post(
  target: { baseUrl: string; host: string; timeoutMs?: number },
  path: string,
  headers: Record<string, string>,
  body: string,
  json404 = false,
): Promise<Answer> {
  return send(target, 'POST', path, headers, body, json404);
}

/** One GET to the ERP at `baseUrl` for tenant `host`, failing as `post` does. */
export function get(target: { baseUrl: string; host: string; timeoutMs?: number }, path: string): Promise<Answer> {
  return send(target, 'GET', path, {}, undefined, false);
}

function send(
  target: { baseUrl: string; host: string; timeoutMs?: number },
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  json404: boolean,
): Promise<Answer> {
  const base = new URL(target.baseUrl);
  const timeoutMs = target.timeoutMs ?? 60_000;
  const host = target.host;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        path,
        method,
        headers: { host, ...headers, ...(body === undefined ? {} : { 'content-length': Buffer.byteLength(body) }) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const isJson = String(res.headers['content-type'] ?? '').startsWith('application/json');
          if (status === 404 && !(json404 && isJson))
            return reject(new ErpUnreachable('no-route', `The ERP has no tenant at ${host}`));
          if (status === 502 || status === 503 || status === 504)
            return reject(new ErpUnreachable('down', `The ERP of ${host} is unavailable (HTTP ${status})`));
          resolve({ status, headers: res.headers, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(new ErpUnreachable('timeout', `The ERP of ${host} did not answer within ${timeoutMs / 1000} s`)),
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof ErpUnreachable) return reject(err);
      reject(new ErpUnreachable('down', `The ERP of ${host} cannot be reached (${err.code ?? 'connection failed'})`));
    });
    req.end(body);
  });
}

/** One XML-RPC call to the ERP at `baseUrl`, for tenant `host`; resolves the result, rejects ErpFault or ErpUnreachable. */
export async function xmlRpcCall(
  target: { baseUrl: string; host: string; timeoutMs?: number },
  path: string,
  method: string,
  params: unknown[],
): Promise<unknown> {
  const answer = await post(target, path, { 'content-type': 'text/xml' }, serializeMethodCall(method, params));
  if (answer.status !== 200)
    throw new ErpUnreachable('bad-answer', `The ERP of ${target.host} answered HTTP ${answer.status}`);
  try {
    return await parseMethodResponse(answer.body);
  } catch (err) {
    if (err instanceof XmlRpcFault) throw new ErpFault(err.faultCode, err.faultString);
    throw new ErpUnreachable('bad-answer', `The ERP of ${target.host} sent an invalid XML-RPC response`);
  }
}

/**
 * A web session on the tenant's ERP, over Odoo's JSON-RPC (`/web/session/authenticate`, then
 * `/web/dataset/call_kw` with the session cookie), as Odoo's web client and the `odoorpc` library
 * use it. The password is checked once, at login; XML-RPC checks it on every call, and on real
 * Odoo 18 each check is a PBKDF2-SHA512 of 600,000 rounds (about a second of the ERP's CPU here).
 * The platform's provisioning steps, which make several calls as the tenant's admin, use this.
 */
export interface ErpSession {
  uid: number;
  callKw<T = unknown>(model: string, method: string, args?: unknown[], kwargs?: Record<string, unknown>): Promise<T>;
}

/** Odoo's JSON-RPC error (`error.data.name` is the Python exception) as the XML-RPC fault it would have been. */
function jsonRpcFault(error: {
  code?: number;
  message?: string;
  data?: { name?: string; message?: string };
}): ErpFault {
  const name = error.data?.name ?? '';
  const message = error.data?.message ?? error.message ?? 'Odoo Server Error';
  if (error.code === 100) return new ErpFault(3, `Session expired: ${message}`);
  if (name === 'odoo.exceptions.AccessDenied') return new ErpFault(3, message);
  if (name === 'odoo.exceptions.AccessError') return new ErpFault(4, message);
  if (/^odoo\.exceptions\.(UserError|ValidationError|MissingError|RedirectWarning)$/.test(name))
    return new ErpFault(2, message);
  return new ErpFault(1, `${name || 'Exception'}: ${message}`);
}

export async function openErpSession(opts: ErpClientOptions): Promise<ErpSession> {
  let cookie = '';
  let id = 0;
  const call = async (path: string, params: Record<string, unknown>): Promise<unknown> => {
    const answer = await post(
      opts,
      path,
      { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      JSON.stringify({ jsonrpc: '2.0', method: 'call', id: ++id, params }),
    );
    const setCookie = ([] as string[])
      .concat(answer.headers['set-cookie'] ?? [])
      .find((c) => c.startsWith('session_id='));
    if (setCookie) cookie = setCookie.split(';')[0]!;
    let parsed: { result?: unknown; error?: Parameters<typeof jsonRpcFault>[0] };
    try {
      parsed = JSON.parse(answer.body.toString('utf8')) as typeof parsed;
    } catch {
      throw new ErpUnreachable('bad-answer', `The ERP of ${opts.host} answered HTTP ${answer.status} without JSON-RPC`);
    }
    if (parsed.error) throw jsonRpcFault(parsed.error);
    if (answer.status !== 200)
      throw new ErpUnreachable('bad-answer', `The ERP of ${opts.host} answered HTTP ${answer.status}`);
    return parsed.result;
  };
  const session = (await call('/web/session/authenticate', {
    db: opts.db,
    login: opts.login,
    password: opts.password,
  })) as { uid?: unknown } | null;
  if (typeof session?.uid !== 'number') throw new ErpFault(3, 'Access Denied');
  return {
    uid: session.uid,
    async callKw<T>(model: string, method: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}) {
      return (await call(`/web/dataset/call_kw/${model}/${method}`, { model, method, args, kwargs })) as T;
    },
  };
}

export function createErpClient(opts: ErpClientOptions): ErpClient {
  let uid: Promise<number> | undefined;
  const call = (path: string, method: string, params: unknown[]) => xmlRpcCall(opts, path, method, params);

  return {
    authenticate() {
      uid ??= call('/xmlrpc/2/common', 'authenticate', [opts.db, opts.login, opts.password, {}]).then((result) => {
        if (typeof result !== 'number') throw new ErpFault(3, 'Access Denied');
        return result;
      });
      uid.catch(() => (uid = undefined)); // a failed login is retried next time
      return uid;
    },
    async executeKw<T>(model: string, method: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}) {
      const id = await this.authenticate();
      return (await call('/xmlrpc/2/object', 'execute_kw', [
        opts.db,
        id,
        opts.password,
        model,
        method,
        args,
        kwargs,
      ])) as T;
    },
  };
}

/** Odoo sends `false` for every empty value: this turns it into null. */
export const orNull = <T>(value: T | false): T | null => (value === false ? null : value);

// ---- JSON-2 (Odoo 19+) ----

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
  };
}
