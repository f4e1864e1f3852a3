/**
 * A real Odoo for the real-Odoo suite (npm run test:odoo), of one ERP version per run: started from
 * ODOO_SRC (scripts/odoo-server.ts, as `ERP_BACKEND=odoo npm run dev` does), which scripts/test-odoo.ts
 * sets from ODOO_SRC_17, ODOO_SRC_18 or ODOO_SRC_19 in turn; or, with ODOO_URL, an Odoo that runs
 * already (then ODOO_URL_VERSION says its version, 18 unless set, ODOO_DATABASE_URL names its
 * PostgreSQL server's admin database and ODOO_DATA_DIR its data dir).
 */
import type { ErpVersion } from '../../domain/tenants/types.js';
import { odooRuntimeOf, odooSourceVersion, type OdooRuntime } from '../../scripts/odoo-templates.js';

export { startOdoo, type OdooServer } from '../../scripts/odoo-server.js';

export const ODOO_HOW_TO =
  'The real-Odoo suite runs once per ERP version whose Odoo source is set: ODOO_SRC_17, ODOO_SRC_18, ODOO_SRC_19, each a ' +
  'folder holding odoo-bin (a copy of Odoo Community 17.0, 18.0 or 19.0; docs/developers.md says which public copies and how ' +
  'to bring and check them, e.g. `git --git-dir=<mirror of Disassembling-Odoo/core> archive 504b0670 | tar -x -C /work/odoo-src-18`; ' +
  "each version's Python requirements are installed once by scripts/odoo-setup.sh). Or ODOO_URL: a running Odoo started " +
  'with --db-filter=^%h$, with ODOO_URL_VERSION (its version, 18 unless set), ODOO_DATABASE_URL (its PostgreSQL server, ' +
  'admin database) and ODOO_DATA_DIR (its data dir).';

/** The ERP version this run's Odoo is. */
export const suiteVersion: ErpVersion = process.env.ODOO_SRC
  ? odooSourceVersion(process.env.ODOO_SRC)
  : ((process.env.ODOO_URL_VERSION ?? '18') as ErpVersion);

export function odooRuntime(dataDir: string): OdooRuntime | undefined {
  const src = process.env.ODOO_SRC;
  return src ? odooRuntimeOf(src, dataDir) : undefined;
}
