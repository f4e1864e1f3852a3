/**
 * Installing Odoo modules into a tenant database, through Odoo's own models as its `admin`
 * (`ir.module.module`): the modules asked for are read; a module the database does not list yet is
 * looked for with `update_list` (Odoo scans its addons path) first; those not installed are
 * installed with `button_immediate_install` (one call, so Odoo resolves their dependencies and
 * reloads its registry once). A module the ERP does not have at all (not in its addons path) cannot
 * be installed by retrying: it is reported as `unavailable`, and the rest is installed.
 */
import type { ErpSession } from './client.js';

/** Installing modules on real Odoo loads their data: minutes, not seconds. */
export const MODULE_INSTALL_TIMEOUT_MS = 9 * 60_000;

export interface ModulesInstall {
  /** Installed by this call. */
  installed: string[];
  /** Those asked for that were installed already. */
  present: number;
  /** Those asked for that the ERP does not have (not in its addons path). */
  unavailable: string[];
}

interface ModuleRow {
  id: number;
  name: string;
  state: string;
}

/** The modules of `names` the database lists, with their states. */
export const listedModules = (admin: ErpSession, names: string[]) =>
  admin.callKw<ModuleRow[]>('ir.module.module', 'search_read', [[['name', 'in', names]]], {
    fields: ['name', 'state'],
  });

/** The modules `names` installed in `database` (its admin's session `admin`, with a timeout fit for an install). */
export async function installModules(admin: ErpSession, database: string, names: string[]): Promise<ModulesInstall> {
  let rows = await listedModules(admin, names);
  if (rows.length < names.length) {
    await admin.callKw('ir.module.module', 'update_list', []);
    rows = await listedModules(admin, names);
  }
  const byName = new Map(rows.map((r) => [r.name, r]));
  const unavailable = names.filter((name) => !byName.has(name) || byName.get(name)!.state === 'uninstallable');
  const toInstall = rows.filter((r) => r.state !== 'installed' && r.state !== 'uninstallable');
  if (toInstall.length) {
    await admin.callKw('ir.module.module', 'button_immediate_install', [toInstall.map((r) => r.id)]);
    const after = await listedModules(
      admin,
      toInstall.map((r) => r.name),
    );
    const still = after.filter((r) => r.state !== 'installed').map((r) => `${r.name} (${r.state})`);
    if (still.length) throw new Error(`the ERP of ${database} did not install ${still.join(', ')}`);
  }
  return {
    installed: toInstall.map((r) => r.name).sort(),
    present: rows.filter((r) => r.state === 'installed').length,
    unavailable,
  };
}
