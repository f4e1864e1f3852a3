/**
 * A real Odoo 18 for the real-Odoo suite (npm run test:odoo): started from ODOO_SRC
 * (scripts/odoo-server.ts, as `ERP_BACKEND=odoo npm run dev` does); or, with ODOO_URL, an Odoo that
 * runs already (then ODOO_DATABASE_URL names its PostgreSQL server's admin database and
 * ODOO_DATA_DIR its data dir).
 */
import { odooPython, type OdooRuntime } from '../../scripts/odoo-templates.js';

export { startOdoo, type OdooServer } from '../../scripts/odoo-server.js';

export const ODOO_HOW_TO =
  'The real-Odoo suite needs Odoo 18: set ODOO_SRC to a folder holding odoo-bin (a copy of Odoo 18.0 Community, e.g. ' +
  '`git --git-dir=<mirror of Disassembling-Odoo/core> archive 504b0670 | tar -x -C /work/odoo-src`; Python requirements are ' +
  'installed once by scripts/odoo-setup.sh), or ODOO_URL to a running Odoo 18 started with --db-filter=^%h$ plus ' +
  'ODOO_DATABASE_URL (its PostgreSQL server, admin database) and ODOO_DATA_DIR (its data dir).';

export function odooRuntime(dataDir: string): OdooRuntime | undefined {
  const src = process.env.ODOO_SRC;
  return src ? { src, python: odooPython(src), dataDir } : undefined;
}
