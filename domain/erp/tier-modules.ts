/**
 * A tenant ERP's module set for its tier (DESIGN §5: a tier change is reconciled into the ERP, not
 * only recorded). Through Odoo's own models in a web session as the tenant database's `admin`
 * (`adminSession` of api-user.ts): the tier's modules not installed are installed (modules.ts).
 *
 * A downgrade uninstalls nothing: uninstalling an Odoo module drops its tables and with them the
 * customer's records (sales orders, stock moves, …). The higher tier's modules stay installed and
 * are reported as `kept`; what the lower tier changes is the platform's side (backup retention, the
 * tier the SaaS endpoints and the portal show). A module the ERP does not have at all (e.g. a
 * community module missing from a real Odoo) is reported as `unavailable`, and the rest is installed.
 */
import type { Tier } from '../tenants/types.js';
import { CATALOGUE_MODULES, tierModuleNames } from '../billing/tiers.js';
import { adminSession, tenantAdminPassword, type ErpApiUserDeps } from './admin-session.js';
import { installModules, listedModules, MODULE_INSTALL_TIMEOUT_MS, type ModulesInstall } from './modules.js';
import { ensureEventRules, type EventRulesResult } from '../erp-events/automation-rules.js';

export interface TierModulesResult extends ModulesInstall {
  /** Installed modules of a higher tier, left installed (a downgrade keeps data). */
  kept: string[];
  /**
   * The event rules (domain/erp-events/automation-rules.ts), when asked for: they need
   * base_automation, a module of every tier.
   */
  eventRules?: EventRulesResult;
}

export async function ensureTierModules(
  deps: ErpApiUserDeps,
  opts: { database: string; tier: Tier; eventRules?: { tenant: string; eventsUrl: string; ingestionKey: string } },
): Promise<TierModulesResult> {
  const wanted = tierModuleNames(opts.tier);
  // one web session: the admin's password is checked once (see api-user.ts)
  const { session: admin, templatePassword } = await adminSession(deps, opts.database, {
    timeoutMs: MODULE_INSTALL_TIMEOUT_MS,
  });
  const modules = await installModules(admin, opts.database, wanted);
  const higher = CATALOGUE_MODULES.map((mod) => mod.name).filter((name) => !wanted.includes(name));
  const kept = higher.length
    ? (await listedModules(admin, higher))
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
  return { ...modules, kept, eventRules };
}
