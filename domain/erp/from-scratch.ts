/**
 * A tenant database installed from scratch, when the template of its tier × version is missing
 * (§3.2: "about 15 minutes when installing the module set from scratch"). The ERP itself installs
 * the tier's modules (real Odoo: `odoo-bin -i`, odoo-bin.ts; the stand-in: the steps of its
 * template build) into `<database>__installing`, which is renamed into place when complete: a
 * half-installed database is never served (the tenant's `/web/health` answers 503 meanwhile, see
 * `tenantDatabaseState`), and an install cut short (a worker killed) is dropped and started over.
 * The result equals a clone: the same modules and demo data, the admin with ERP_ADMIN_PASSWORD (the
 * later reconcile steps make the API user, the event rules and the tenant's own admin password),
 * and a `database.uuid`/`database.secret` of its own.
 *
 * The first install of a missing template also makes the template from its result (a copy, taken
 * before the rename), so the next tenant of that tier × version clones again. One install per
 * database and one template copy per template at a time (advisory locks): two tenants of the same
 * missing tier × version install side by side, and only one of them makes the template.
 */
import { cpSync, existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { ErpVersion, Tier } from '../tenants/types.js';
import { assertDatabaseName, giveOwnIdentity, templateDatabaseName, tenantDatabaseExists } from './tenant-database.js';

/** How far an install is: the module being loaded, and its place in the ERP's own count. */
export interface InstallProgress {
  module: string;
  index: number;
  total: number;
}

/** What installs a database with a tier's modules: the ERP itself (`odoo-bin -i`, or the stand-in's steps). */
export interface ErpInstaller {
  /** Creates `database` (it does not exist) with the tier's modules and demo data, its admin's password ERP_ADMIN_PASSWORD. */
  install(opts: {
    database: string;
    tier: Tier;
    version: ErpVersion;
    onProgress: (progress: InstallProgress) => void;
    signal?: AbortSignal;
  }): Promise<void>;
  /** The comment a template database made from such an install carries (as the template builds write it). */
  templateMark(version: ErpVersion): string;
  /** Where the ERP keeps each database's files (`<root>/<database>`), if it does. */
  filestoreRoot?: string;
}

/** The install cannot run here at all (retrying cannot help): e.g. no Odoo to run, or not this version. */
export class InstallerUnavailableError extends Error {
  override name = 'InstallerUnavailableError';
}

/** Another attempt is installing this database right now (a retry whose earlier attempt still runs). */
export class InstallBusyError extends Error {
  override name = 'InstallBusyError';
}

export const installingDatabaseName = (database: string) => `${database}__installing`;
const templateCopyName = (template: string) => `${template}__from_install`;

export type TenantDatabaseState = 'ready' | 'installing' | 'missing';

/** Whether the tenant database is there, being installed from scratch, or neither. */
export async function tenantDatabaseState(admin: pg.Pool, database: string): Promise<TenantDatabaseState> {
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY($1)', [
    [database, installingDatabaseName(database)],
  ]);
  const names = new Set(rows.map((r) => r.datname));
  return names.has(database) ? 'ready' : names.has(installingDatabaseName(database)) ? 'installing' : 'missing';
}

/**
 * Why a routed host has no ERP worker serving it (§7: the health probe answers 503 while the route
 * is up but the worker is not): its database is being installed from scratch, or is not there.
 * Undefined when the database is there. Real Odoo's own /web/health answers 200 for any Host
 * without opening the database, so the tenant's entry (the ingress, the stand-in) says this.
 */
export async function unservedDatabaseReason(admin: pg.Pool, database: string): Promise<string | undefined> {
  const state = await tenantDatabaseState(admin, database);
  if (state === 'installing') return `database "${database}" is being installed from scratch`;
  if (state === 'missing') return `database "${database}" does not exist`;
  return undefined;
}

export interface FromScratchResult {
  database: string;
  /** 'exists' when the database was there already (an earlier attempt finished). */
  outcome: 'installed' | 'exists';
  installMs: number;
  /** The template this install made (it was missing), and how long the copy took. */
  template?: { name: string; ms: number };
}

/**
 * Installs `database` from scratch with the tier's modules (see the module comment). Idempotent: an
 * existing database is left alone; a leftover `<database>__installing` is dropped first.
 */
export async function installTenantDatabaseFromScratch(
  admin: pg.Pool,
  installer: ErpInstaller,
  opts: {
    database: string;
    tier: Tier;
    version: ErpVersion;
    onProgress: (progress: InstallProgress) => void;
    signal?: AbortSignal;
  },
): Promise<FromScratchResult> {
  const { database } = opts;
  const installing = installingDatabaseName(database);
  assertDatabaseName(database);
  assertDatabaseName(installing);
  return withTryLock(admin, `plana-install:${database}`, async (locked) => {
    if (!locked) throw new InstallBusyError(`an install of ${database} is already running`);
    if (await tenantDatabaseExists(admin, database)) return { database, outcome: 'exists' as const, installMs: 0 };
    await dropDatabase(admin, installer, installing);
    const started = Date.now();
    await installer.install({ ...opts, database: installing });
    const installMs = Date.now() - started;
    // best effort: the template is for the next tenant; this one's install stands without it
    const template = await templateFromInstall(admin, installer, {
      installed: installing,
      template: templateDatabaseName(opts.tier, opts.version),
      mark: installer.templateMark(opts.version),
    }).catch(() => undefined);
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(installing)} RENAME TO ${pg.escapeIdentifier(database)}`);
    moveFilestore(installer.filestoreRoot, installing, database);
    // as after a clone: its own uuid and secret (the template made from it keeps the install's)
    await giveOwnIdentity(admin, { database, template: '' });
    return { database, outcome: 'installed' as const, installMs, template };
  });
}

/**
 * The missing template, copied from a complete install (`CREATE DATABASE … TEMPLATE`, then renamed
 * into place and marked as the template builds mark theirs). Only while the template is missing and
 * by one install at a time: the others go on without (undefined).
 */
async function templateFromInstall(
  admin: pg.Pool,
  installer: ErpInstaller,
  opts: { installed: string; template: string; mark: string },
): Promise<{ name: string; ms: number } | undefined> {
  return withTryLock(admin, `plana-template:${opts.template}`, async (locked) => {
    if (!locked || (await tenantDatabaseExists(admin, opts.template))) return undefined;
    const started = Date.now();
    const id = pg.escapeIdentifier;
    const copy = templateCopyName(opts.template);
    await dropDatabase(admin, installer, copy);
    await admin.query(`CREATE DATABASE ${id(copy)} TEMPLATE ${id(opts.installed)}`);
    // (a template build that finished meanwhile keeps its name: the copy is dropped)
    await admin.query(`ALTER DATABASE ${id(copy)} RENAME TO ${id(opts.template)}`).catch(async (err: unknown) => {
      await dropDatabase(admin, installer, copy);
      throw err;
    });
    await admin.query(`COMMENT ON DATABASE ${id(opts.template)} IS ${pg.escapeLiteral(opts.mark)}`);
    await admin.query(`ALTER DATABASE ${id(opts.template)} WITH IS_TEMPLATE true`);
    copyFilestore(installer.filestoreRoot, opts.installed, opts.template);
    return { name: opts.template, ms: Date.now() - started };
  });
}

/** Runs `fn` holding a session advisory lock on `key` if it is free (`fn(false)` if not). */
async function withTryLock<T>(admin: pg.Pool, key: string, fn: (locked: boolean) => Promise<T>): Promise<T> {
  const client = await admin.connect();
  try {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [
      key,
    ]);
    const locked = rows[0]!.locked;
    try {
      return await fn(locked);
    } finally {
      if (locked) await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => {});
    }
  } finally {
    client.release();
  }
}

async function dropDatabase(admin: pg.Pool, installer: ErpInstaller, name: string): Promise<void> {
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  if (installer.filestoreRoot) rmSync(path.join(installer.filestoreRoot, name), { recursive: true, force: true });
}

function moveFilestore(root: string | undefined, from: string, to: string): void {
  if (!root || !existsSync(path.join(root, from))) return;
  rmSync(path.join(root, to), { recursive: true, force: true });
  renameSync(path.join(root, from), path.join(root, to));
}

function copyFilestore(root: string | undefined, from: string, to: string): void {
  if (!root || !existsSync(path.join(root, from))) return;
  rmSync(path.join(root, to), { recursive: true, force: true });
  cpSync(path.join(root, from), path.join(root, to), { recursive: true });
}
