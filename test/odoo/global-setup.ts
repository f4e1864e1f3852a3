/**
 * The real-Odoo suite's own preparation, before the run's servers (test/global-setup.ts): the
 * workspace portal is built, since "Open ERP" is tested in a browser from the portal at /app/ and
 * this suite does not run after `npm test` or `npm run dev` (which build it). Built every run, so a
 * web/dist left from older sources is never what is tested.
 */
import { buildPortal } from '../../scripts/portal-build.js';

export default async function setup() {
  const started = Date.now();
  await buildPortal();
  console.log(`real-Odoo suite: portal built (web/dist) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
