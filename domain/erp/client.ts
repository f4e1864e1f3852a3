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
    // code 1 carries a Python traceback: its last line is the useful part
    super(code === 1 ? (faultString.trim().split('\n').pop() ?? faultString) : faultString);
  }
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

/** One XML-RPC call to the ERP at `baseUrl`, for tenant `host`; resolves the result, rejects ErpFault or ErpUnreachable. */
export function xmlRpcCall(target: { baseUrl: string; host: string; timeoutMs?: number }, path: string, method: string, params: unknown[]): Promise<unknown> {
  const base = new URL(target.baseUrl);
  const timeoutMs = target.timeoutMs ?? 60_000;
  const host = target.host;
  const body = serializeMethodCall(method, params);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        path,
        method: 'POST',
        headers: { host, 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status === 404) return reject(new ErpUnreachable('no-route', `The ERP has no tenant at ${host}`));
          if (status === 502 || status === 503 || status === 504) return reject(new ErpUnreachable('down', `The ERP of ${host} is unavailable (HTTP ${status})`));
          if (status !== 200) return reject(new ErpUnreachable('bad-answer', `The ERP of ${host} answered HTTP ${status}`));
          parseMethodResponse(Buffer.concat(chunks)).then(resolve, (err: unknown) =>
            reject(err instanceof XmlRpcFault ? new ErpFault(err.faultCode, err.faultString) : new ErpUnreachable('bad-answer', `The ERP of ${host} sent an invalid XML-RPC response`)),
          );
        });
      },
    );
    req.on('timeout', () => req.destroy(new ErpUnreachable('timeout', `The ERP of ${host} did not answer within ${timeoutMs / 1000} s`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof ErpUnreachable) return reject(err);
      reject(new ErpUnreachable('down', `The ERP of ${host} cannot be reached (${err.code ?? 'connection failed'})`));
    });
    req.end(body);
  });
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
      return (await call('/xmlrpc/2/object', 'execute_kw', [opts.db, id, opts.password, model, method, args, kwargs])) as T;
    },
    async version() {
      return (await call('/xmlrpc/2/common', 'version', [])) as Record<string, unknown>;
    },
  };
}

/** Odoo sends `false` for every empty value: this turns it into null. */
export const orNull = <T>(value: T | false): T | null => (value === false ? null : value);
