/**
 * The production worker's installer of a tenant database from scratch, when its template is missing
 * (domain/erp/from-scratch.ts): real Odoo's `odoo-bin -i` from ODOO_SRC (ERP_BACKEND=odoo), for the one ERP version that source is. Without
 * ODOO_SRC, or for the ERP stand-in (whose installer the composition roots in scripts/ and test/
 * pass to createWorker), the install is unavailable and the tenant waits for its template.
 */
import type { Config } from '../lib/config.js';
import { InstallerUnavailableError, type ErpInstaller } from '../domain/erp/from-scratch.js';
import { odooInstaller, odooSourceVersion, odooVenvPython } from '../domain/erp/odoo-bin.js';

const unavailable = (reason: string): ErpInstaller => ({
  templateMark: () => '',
  install: () => Promise.reject(new InstallerUnavailableError(reason)),
});

export function erpInstallerFor(config: Config): ErpInstaller {
  if (config.ERP_BACKEND !== 'odoo')
    return unavailable(
      'this worker installs with real Odoo only (ERP_BACKEND=odoo): the ERP stand-in installs through the development worker (npm run dev, npm run start:worker)',
    );
  if (!config.ODOO_SRC)
    return unavailable(
      'the worker has no Odoo to install with (set ODOO_SRC), so the tenant waits for its template: build it with `npm run odoo:templates`',
    );
  const version = odooSourceVersion(config.ODOO_SRC);
  return odooInstaller(
    {
      src: config.ODOO_SRC,
      version,
      python: config.ODOO_PYTHON ?? odooVenvPython(version),
      dataDir: config.ODOO_DATA_DIR,
    },
    { erpDatabaseUrl: config.ERP_DATABASE_URL, adminPassword: config.ERP_ADMIN_PASSWORD },
  );
}
