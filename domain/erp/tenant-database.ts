/**
 * Tenant databases on the ERP's PostgreSQL server: one per tenant, named after the tenant hostname,
 * cloned from the template database for its tier × ERP version (`CREATE DATABASE … TEMPLATE …`).
 * `admin` is a pool on ERP_DATABASE_URL (the server's `postgres` database).
 */
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { ErpVersion, Tier } from '../tenants/types.js';

export const templateDatabaseName = (tier: Tier, erpVersion: ErpVersion) => `erp_tpl_${tier}_${erpVersion}`;
export const tenantHostname = (subdomain: string, tenantDomain: string) => `${subdomain}.${tenantDomain}`;

export class TemplateMissingError extends Error {
  override name = 'TemplateMissingError';
  constructor(readonly template: string) {
    super(`template database ${template} does not exist`);
  }
}

/** A name that can never be a tenant database (retrying cannot help). */
export class InvalidDatabaseNameError extends Error {
  override name = 'InvalidDatabaseNameError';
}

/** PostgreSQL identifiers are at most 63 bytes; we also keep names to what hostnames use. */
const isDatabaseName = (name: string) => /^[a-z0-9][a-z0-9._-]{0,62}$/.test(name);

export function assertDatabaseName(name: string): void {
  if (!isDatabaseName(name)) throw new InvalidDatabaseNameError(`invalid database name: ${JSON.stringify(name)}`);
}

const pgCode = (err: unknown) => (err as { code?: string }).code;

export async function tenantDatabaseExists(admin: pg.Pool, database: string): Promise<boolean> {
  const res = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  return res.rowCount === 1;
}

/**
 * CREATE DATABASE "<database>" TEMPLATE "<template>". Idempotent ('exists' when already there) and
 * safe under concurrency: of two callers at once, one creates and the other gets 'exists'.
 * Throws TemplateMissingError when the template does not exist.
 */
export async function cloneTenantDatabase(
  admin: pg.Pool,
  opts: { database: string; template: string; filestoreRoot?: string },
): Promise<'created' | 'exists'> {
  const outcome = await createFromTemplate(admin, opts);
  if (outcome === 'created') await giveOwnIdentity(admin, opts);
  return outcome;
}

/**
 * What Odoo's own database duplication does after the copy (odoo/service/db.py
 * `exp_duplicate_database`): a new `database.uuid` and `database.secret` (`ir.config_parameter`,
 * so sessions, signed tokens and the IAP identity of one tenant are never valid in another) and a
 * copy of the template's filestore (`<root>/<template>` → `<root>/<database>`), when it has one.
 */
export async function giveOwnIdentity(
  admin: pg.Pool,
  opts: { database: string; template: string; filestoreRoot?: string },
): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl(clientUrl(admin), opts.database) });
  await db.connect();
  try {
    await db.query(
      `UPDATE ir_config_parameter SET value = CASE key WHEN 'database.uuid' THEN $1 WHEN 'database.secret' THEN $2 ELSE to_char(now() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') END
        WHERE key IN ('database.uuid', 'database.secret', 'database.create_date')`,
      [randomUUID(), randomUUID()],
    );
  } finally {
    await db.end();
  }
  if (opts.filestoreRoot) {
    const from = path.join(opts.filestoreRoot, opts.template);
    const to = path.join(opts.filestoreRoot, opts.database);
    if (existsSync(from) && !existsSync(to)) cpSync(from, to, { recursive: true });
  }
}

/** The connection string a pool was made with. */
export function clientUrl(pool: pg.Pool): string {
  const { connectionString } = pool.options as { connectionString?: string };
  if (!connectionString) throw new Error('the ERP admin pool needs a connection string');
  return connectionString;
}

/** Removes a tenant's Odoo filestore (`<root>/<database>`), if any. */
export function removeTenantFilestore(filestoreRoot: string, database: string): void {
  if (!isDatabaseName(database)) return;
  rmSync(path.join(filestoreRoot, database), { recursive: true, force: true });
}

async function createFromTemplate(
  admin: pg.Pool,
  opts: { database: string; template: string },
): Promise<'created' | 'exists'> {
  assertDatabaseName(opts.database);
  assertDatabaseName(opts.template);
  if (await tenantDatabaseExists(admin, opts.database)) return 'exists';
  if (!(await tenantDatabaseExists(admin, opts.template))) throw new TemplateMissingError(opts.template);
  const sql = `CREATE DATABASE ${pg.escapeIdentifier(opts.database)} TEMPLATE ${pg.escapeIdentifier(opts.template)}`;
  // "source database is being accessed by other users" (55006) is transient: someone (a template
  // build, a pg_dump) holds a connection to the template for a moment. Retry for a few seconds.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(sql);
      return 'created';
    } catch (err) {
      const code = pgCode(err);
      if (code === '42P04') return 'exists'; // duplicate_database: a concurrent caller won
      if (code === '3D000') throw new TemplateMissingError(opts.template); // dropped meanwhile
      // a concurrent CREATE of the same name can also surface as a unique violation on pg_database
      if (code === '23505' && (await tenantDatabaseExists(admin, opts.database))) return 'exists';
      if (code === '55006' && attempt < 50) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      throw err;
    }
  }
}

/**
 * Terminates the database's connections and drops it (DROP DATABASE IF EXISTS … WITH (FORCE)).
 * A name that is not a valid database name was never created: 'absent', so a half-made tenant
 * deprovisions to nothing.
 */
export async function dropTenantDatabase(admin: pg.Pool, database: string): Promise<'dropped' | 'absent'> {
  if (!isDatabaseName(database)) return 'absent';
  if (!(await tenantDatabaseExists(admin, database))) return 'absent';
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  return 'dropped';
}

/** The connection string for `database` on the same server and user as `adminUrl`. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}
