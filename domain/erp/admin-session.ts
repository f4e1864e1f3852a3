/**
 * How the platform reaches a tenant's ERP as the tenant database's `admin` (to make its dedicated
 * users and keys, api-user.ts and api-key.ts): the admin's password, one web session, the ERP's
 * version. The admin's password in a template is ERP_ADMIN_PASSWORD; on first use in a tenant the
 * platform replaces it with one derived from SECRETS_KEY and the database name (HKDF), so no two
 * tenants share an admin password and nothing more has to be stored.
 */
import { hkdfSync } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import {
  ErpFault,
  ErpUnreachable,
  get,
  openErpSession,
  xmlRpcCall,
  type ErpClient,
  type ErpSession,
} from './client.js';

export interface ErpApiUserDeps {
  platform: pg.Pool;
  /** The ERP entry point; the tenant is chosen by the Host header (its database name). */
  erpUrl: string;
  secretsKey: string;
  /** The `admin` password of the template databases (ERP_ADMIN_PASSWORD). */
  erpAdminPassword: string;
}

/** The deps from the configuration; `erpUrl` defaults to ERP_URL. */
export const erpApiUserDeps = (config: Config, platform: pg.Pool, erpUrl = config.ERP_URL): ErpApiUserDeps => ({
  platform,
  erpUrl,
  secretsKey: config.SECRETS_KEY,
  erpAdminPassword: config.ERP_ADMIN_PASSWORD,
});

/** The tenant database's own admin password, derived from SECRETS_KEY (never stored). */
export function tenantAdminPassword(secretsKey: string, database: string): string {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretsKey, 'base64'), 'plana-erp-admin', database, 32)).toString(
    'base64url',
  );
}

/**
 * A web session as the tenant's `admin`: with its own password, or (a fresh clone) with the
 * template's; `templatePassword` then says the admin's password is still the template's. A tenant
 * the platform has made no user for yet is most likely a fresh clone: its template password is
 * tried first (each refused password costs the ERP a full password hash).
 */
export async function adminSession(
  deps: ErpApiUserDeps,
  database: string,
  opts: { freshClone?: boolean; timeoutMs?: number } = {},
): Promise<{ session: ErpSession; templatePassword: boolean }> {
  const attempts = [
    { password: tenantAdminPassword(deps.secretsKey, database), templatePassword: false },
    { password: deps.erpAdminPassword, templatePassword: true },
  ];
  if (opts.freshClone) attempts.reverse();
  for (const { password, templatePassword } of attempts) {
    try {
      return {
        session: await openErpSession({
          baseUrl: deps.erpUrl,
          host: database,
          db: database,
          login: 'admin',
          password,
          timeoutMs: opts.timeoutMs,
        }),
        templatePassword,
      };
    } catch (err) {
      if (!(err instanceof ErpFault && err.code === 3)) throw err;
    }
  }
  throw new Error(`the ERP admin of ${database} refused both the tenant's and the template's password`);
}

/**
 * The ERP's major version, asked without a login: Odoo 19+ answers `GET /json/version` (its JSON-2
 * API's; 19 deprecates XML-RPC and logs every call to it); Odoo 17 and 18 have no such route (404)
 * and answer `version` on /xmlrpc/2/common.
 */
export async function erpMajorVersion(erpUrl: string, host: string): Promise<number> {
  const target = { baseUrl: erpUrl, host };
  const versionInfo = await get(target, '/json/version').then(
    (answer) => parsedJson<{ version_info?: unknown[] }>(answer.body)?.version_info,
    (err: unknown) => {
      if (err instanceof ErpUnreachable && err.reason === 'no-route') return undefined;
      throw err;
    },
  );
  const info =
    versionInfo ??
    ((await xmlRpcCall(target, '/xmlrpc/2/common', 'version', [])) as { server_version_info?: unknown[] })
      .server_version_info;
  const major = Number(info?.[0]);
  if (!Number.isInteger(major)) throw new ErpUnreachable('bad-answer', `The ERP of ${host} did not say its version`);
  return major;
}

function parsedJson<T>(body: Buffer): T | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The res.users field of a user's groups: renamed in Odoo 19. */
export const groupsField = (version: number) => (version >= 19 ? 'group_ids' : 'groups_id');

/** Whether the client's credentials log in (false for a refused login; other faults throw). */
export async function authenticates(client: ErpClient): Promise<boolean> {
  try {
    await client.authenticate();
    return true;
  } catch (err) {
    if (err instanceof ErpFault && err.code === 3) return false; // False or Access Denied
    throw err;
  }
}
