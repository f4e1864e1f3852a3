/**
 * The Odoo series the stand-in speaks and the modules it knows by name: what a tenant's route
 * (namespace `plana-odoo-<series>`) and Odoo's own module list say, written down here from Odoo's
 * side, not read from the platform's code.
 */

/** The Odoo series the stand-in answers as (`server_version` `<series>.0`). */
export const ODOO_SERIES = ['17', '18', '19'] as const;
export type ErpVersion = (typeof ODOO_SERIES)[number];

/** OCA's auth_oidc: the module a tenant ERP signs in through the platform's OpenID provider with. */
export const AUTH_OIDC_MODULE = 'auth_oidc';
