/** What the ERP stand-in's protocol handlers share: tenants, credentials, sessions, the ORM. */
import type { Logger } from 'pino';
import { OdooError } from './odoo-errors.js';
import type { apiKeyWizards } from './apikeys.js';
import type { OrmCall } from './automated-call.js';
import type { Credentials, WebSessions } from './credentials.js';
import type { TenantDatabases } from './tenant-databases.js';

export interface ErpServices {
  log: Logger;
  tenants: TenantDatabases;
  credentials: Credentials;
  sessions: WebSessions;
  wizards: ReturnType<typeof apiKeyWizards>;
  call: OrmCall;
}

/** Odoo's TypeErrors for call arguments that are not a list and a dict. */
export function checkArgs(args: unknown, kwargs: unknown): asserts kwargs is Record<string, unknown> {
  if (!Array.isArray(args)) throw new OdooError(1, 'args must be a list', 'TypeError');
  if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs))
    throw new OdooError(1, 'kwargs must be a dict', 'TypeError');
}
