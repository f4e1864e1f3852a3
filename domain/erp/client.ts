/**
 * The platform's XML-RPC client for a tenant ERP (Odoo's external API): `authenticate` on
 * `/xmlrpc/2/common` (uid cached), `execute_kw` on `/xmlrpc/2/object`. Requests go to ERP_URL with
 * the tenant hostname as `Host` (node:http; fetch would drop it). Faults become `ErpFault`;
 * transport failures become `ErpUnreachable` with what went wrong in the ERP's own terms (no route
 * for the host, not reachable, too slow, an answer that is not XML-RPC). What either means to a
 * caller of the platform (a 404, a 503, …) is decided by the operation that used the client.
 */
import { request } from 'node:http';
import { XmlRpcFault, parseMethodResponse, serializeMethodCall } from './xmlrpc-wire.js';

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
  version(): Promise<Record<string, unknown>>;
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
        method: 'POST',
        headers: { host, ...headers, 'content-length': Buffer.byteLength(body) },
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
    async version() {
      return (await call('/xmlrpc/2/common', 'version', [])) as Record<string, unknown>;
    },
  };
}

/** Odoo sends `false` for every empty value: this turns it into null. */
export const orNull = <T>(value: T | false): T | null => (value === false ? null : value);
