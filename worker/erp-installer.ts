/**
 * What installs a tenant database from scratch when its template is missing (domain/erp/from-scratch.ts),
 * for the configured ERP: real Odoo's `odoo-bin -i` from ODOO_SRC (ERP_BACKEND=odoo), or the ERP
 * stand-in's own install steps (those of its template build).
 */
import type { Config } from '../lib/config.js';
import { InstallerUnavailableError, type ErpInstaller } from '../domain/erp/from-scratch.js';
import { odooInstaller } from '../domain/erp/odoo-bin.js';
import { installStandInDatabase, standInTemplateMark } from '../sandbox/erp/install.js';

const today = () => new Date().toISOString().slice(0, 10);

export function erpInstallerFor(config: Config): ErpInstaller {
  if (config.ERP_BACKEND === 'odoo') {
    if (config.ODOO_SRC)
      return odooInstaller(
        { src: config.ODOO_SRC, python: config.ODOO_PYTHON, dataDir: config.ODOO_DATA_DIR },
        { erpDatabaseUrl: config.ERP_DATABASE_URL, adminPassword: config.ERP_ADMIN_PASSWORD },
      );
    return {
      templateMark: () => '',
      install: () =>
        Promise.reject(
          new InstallerUnavailableError(
            'the worker has no Odoo to install with (set ODOO_SRC), so the tenant waits for its template: build it with `npm run odoo:templates`',
          ),
        ),
    };
  }
  return {
    templateMark: () => standInTemplateMark(today()),
    install: ({ database, tier, version, onProgress, signal }) =>
      installStandInDatabase(config.ERP_DATABASE_URL, {
        database,
        tier,
        version,
        today: today(),
        adminPassword: config.ERP_ADMIN_PASSWORD,
        paceMs: config.ERP_STANDIN_MODULE_INSTALL_TIME,
        onProgress,
        signal,
      }),
  };
}
