/** `npm run test:odoo`: the real-Odoo suite, or what to set when there is no Odoo to run it against. */
import { spawnSync } from 'node:child_process';
import { ODOO_HOW_TO } from '../test/support/odoo-server.js';

if (!process.env.ODOO_SRC && !process.env.ODOO_URL) {
  console.error(`npm run test:odoo: neither ODOO_SRC nor ODOO_URL is set.\n${ODOO_HOW_TO}`);
  process.exit(2);
}
const started = Date.now();
const run = spawnSync('npx', ['vitest', 'run', '-c', 'vitest.odoo.config.ts', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
console.log(`real-Odoo suite finished in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(run.status ?? 1);
