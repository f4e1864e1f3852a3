/**
 * A tenant ERP's module set for its tier (DESIGN §5: a tier change is reconciled into the ERP, not
 * only recorded). Through Odoo's own models in a web session as the tenant database's `admin`
 * (`adminSession` of api-user.ts): `ir.module.module` is read for the tier's modules; those not installed
 * are installed with `button_immediate_install` (one call, so Odoo resolves their dependencies and
 * reloads its registry once); a module the database does not list yet is looked for with
 * `update_list` (Odoo scans its addons path) first.
 *
 * A downgrade uninstalls nothing: uninstalling an Odoo module drops its tables and with them the
 * customer's records (sales orders, stock moves, …). The higher tier's modules stay installed and
 * are reported as `kept`; what the lower tier changes is the platform's side (backup retention, the
 * tier the SaaS endpoints and the portal show). A module the ERP does not have at all (not in its
 * addons path, e.g. a community module missing from a real Odoo) cannot be installed by retrying:
 * it is reported as `unavailable`, and the rest is installed.
 */
import type { Tier } from '../tenants/types.js';
import { CATALOGUE_MODULES, tierModuleNames } from '../billing/tiers.js';
import { adminSession, tenantAdminPassword, type ErpApiUserDeps } from './admin-session.js';
import type { ErpSession } from './client.js';
import { ensureEventRules, type EventRulesResult } from '../erp-events/automation-rules.js';

/** Installing modules on real Odoo loads their data: minutes, not seconds. */
export const MODULE_INSTALL_TIMEOUT_MS = 9 * 60_000;

export interface TierModulesResult {
  /** Installed by this call. */
  installed: string[];
  /** The tier's modules that were installed already. */
  present: number;
  /** Installed modules of a higher tier, left installed (a downgrade keeps data). */
  kept: string[];
  /** The tier's modules the ERP does not have (not in its addons path). */
  unavailable: string[];
  /** The event rules (event-rules.ts), when asked for: they need base_automation, a module of every tier. */
  eventRules?: EventRulesResult;
}

interface ModuleRow {
  id: number;
  name: string;
  state: string;
}

const listed = (admin: ErpSession, names: string[]) =>
  admin.callKw<ModuleRow[]>('ir.module.module', 'search_read', [[['name', 'in', names]]], {
    fields: ['name', 'state'],
  });

export async function ensureTierModules(
  deps: ErpApiUserDeps,
  opts: { database: string; tier: Tier; eventRules?: { tenant: string; eventsUrl: string; ingestionKey: string } },
): Promise<TierModulesResult> {
  const wanted = tierModuleNames(opts.tier);
  // one web session: the admin's password is checked once (see api-user.ts)
  const { session: admin, templatePassword } = await adminSession(deps, opts.database, {
    timeoutMs: MODULE_INSTALL_TIMEOUT_MS,
  });
  let rows = await listed(admin, wanted);
  if (rows.length < wanted.length) {
    await admin.callKw('ir.module.module', 'update_list', []);
    rows = await listed(admin, wanted);
  }
  const byName = new Map(rows.map((r) => [r.name, r]));
  const unavailable = wanted.filter((name) => !byName.has(name) || byName.get(name)!.state === 'uninstallable');
  const toInstall = rows.filter((r) => r.state !== 'installed' && r.state !== 'uninstallable');
  if (toInstall.length) {
    await admin.callKw('ir.module.module', 'button_immediate_install', [toInstall.map((r) => r.id)]);
    const after = await listed(
      admin,
      toInstall.map((r) => r.name),
    );
    const still = after.filter((r) => r.state !== 'installed').map((r) => `${r.name} (${r.state})`);
    if (still.length) throw new Error(`the ERP of ${opts.database} did not install ${still.join(', ')}`);
  }
  const higher = CATALOGUE_MODULES.map((mod) => mod.name).filter((name) => !wanted.includes(name));
  const kept = higher.length
    ? (await listed(admin, higher))
        .filter((r) => r.state === 'installed')
        .map((r) => r.name)
        .sort()
    : [];
  // the automation rules that post record changes to the platform, in the same admin session
  const eventRules = opts.eventRules ? await ensureEventRules(admin, opts.eventRules) : undefined;
  // (the API user's step changes a fresh clone's admin password first; should it not have, do it here, last)
  if (templatePassword)
    await admin.callKw('res.users', 'write', [
      [admin.uid],
      { password: tenantAdminPassword(deps.secretsKey, opts.database) },
    ]);
  return {
    installed: toInstall.map((r) => r.name).sort(),
    present: rows.filter((r) => r.state === 'installed').length,
    kept,
    unavailable,
    eventRules,
  };
}
