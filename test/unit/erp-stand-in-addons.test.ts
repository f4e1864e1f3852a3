/**
 * The ERP stand-in keeps its own addons path (sandbox/erp/demo-data.ts), as Odoo has its own modules:
 * every module the platform installs for a tier (domain/billing/tiers.ts and the sign-in module) must
 * be on it, under the catalogue's display name, or a template build and a tier change fail there.
 */
import { expect, it } from 'vitest';
import { CATALOGUE_MODULES } from '../../domain/billing/tiers.js';
import { ODOO_SIGN_IN_MODULE, erpInstallModules } from '../../domain/erp/odoo-bin.js';
import { tiers } from '../../domain/tenants/types.js';
import { STAND_IN_ADDONS } from '../../sandbox/erp/demo-data.js';

it("lists every module of the platform's catalogue, and the sign-in module, on the stand-in's addons path", () => {
  const addons = new Map(STAND_IN_ADDONS.map((mod) => [mod.name, mod]));
  for (const mod of CATALOGUE_MODULES) expect(addons.get(mod.name)).toEqual(mod);
  expect(addons.has(ODOO_SIGN_IN_MODULE)).toBe(true);
  for (const tier of tiers) for (const name of erpInstallModules(tier)) expect(addons.has(name)).toBe(true);
});
