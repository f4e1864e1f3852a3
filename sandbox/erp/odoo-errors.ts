/**
 * Odoo's exceptions and how `/xmlrpc/2/` turns them into faults (odoo/http.py,
 * `xmlrpc_handle_exception_int`): UserError and MissingError → 2, AccessDenied → 3,
 * AccessError → 4, anything else → 1 with the formatted traceback as the fault string.
 */
export class OdooError extends Error {
  constructor(
    readonly faultCode: 1 | 2 | 3 | 4,
    message: string,
    /** The Python exception type, for the traceback of code 1 faults. */
    readonly pythonType: string,
  ) {
    super(message);
  }

  get faultString(): string {
    if (this.faultCode !== 1) return this.message;
    return [
      'Traceback (most recent call last):',
      '  File "/usr/lib/python3/dist-packages/odoo/http.py", line 1, in _dispatch_rpc',
      '  File "/usr/lib/python3/dist-packages/odoo/service/model.py", line 1, in execute_kw',
      `${this.pythonType}: ${this.message}`,
      '',
    ].join('\n');
  }
}

export const userError = (message: string) => new OdooError(2, message, 'odoo.exceptions.UserError');
/** odoo.exceptions.ValidationError (a UserError): also what a violated SQL constraint becomes. */
export const validationError = (message: string) => new OdooError(2, message, 'odoo.exceptions.ValidationError');
export const missingError = (message: string) => new OdooError(2, message, 'odoo.exceptions.MissingError');
export const accessDenied = () => new OdooError(3, 'Access Denied', 'odoo.exceptions.AccessDenied');
export const accessError = (message: string) => new OdooError(4, message, 'odoo.exceptions.AccessError');
export const valueError = (message: string) => new OdooError(1, message, 'ValueError');
export const typeError = (message: string) => new OdooError(1, message, 'TypeError');
export const attributeError = (message: string) => new OdooError(1, message, 'AttributeError');

/**
 * An ORM call on a model the database's registry does not have (its module is not installed):
 * `execute_kw` answers UserError; `/web/dataset/call_kw` answers werkzeug's NotFound (web-client.ts).
 */
export class UnknownModelError extends OdooError {
  constructor(model: string) {
    super(2, `Object ${model} doesn't exist`, 'odoo.exceptions.UserError');
  }
}

/** Anything thrown while answering a call, as the fault Odoo would send (code 1 for non-Odoo errors). */
export function toFault(err: unknown): OdooError {
  if (err instanceof OdooError) return err;
  const code = (err as { code?: unknown }).code;
  // PostgreSQL rejected a value (e.g. a malformed date in a domain): psycopg2 raises, Odoo answers fault 1
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return new OdooError(1, (err as Error).message, 'psycopg2.errors.DatabaseError');
  if (
    err instanceof Error &&
    err.name !== 'TypeError' &&
    /XML|Unexpected|Invalid|Not a method call|method name/i.test(err.message)
  ) {
    return new OdooError(1, err.message, 'xml.parsers.expat.ExpatError');
  }
  return new OdooError(1, 'Internal error', 'Exception');
}

/** Odoo's `_missing_error` message for records that are gone (or hidden by a record rule). */
export const missingRecords = (model: string, ids: readonly unknown[], uid: number) =>
  missingError(`Record does not exist or has been deleted.\n(Record: ${model}(${ids.join(', ')},), User: ${uid})`);
