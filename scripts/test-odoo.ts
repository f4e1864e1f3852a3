/**
 * `npm run test:odoo`: the real-Odoo suite, once per ERP version whose Odoo source is set
 * (ODOO_SRC_17, ODOO_SRC_18, ODOO_SRC_19; a version without one is left out, saying so), or once
 * against ODOO_URL; or what to set when there is no Odoo to run it against. Extra arguments go to
 * vitest (a file, `-t <name>`).
 */
import { spawnSync } from 'node:child_process';
import { erpVersions } from '../domain/tenants/types.js';
import { ODOO_HOW_TO } from '../test/support/odoo-server.js';

const vitest = (env: NodeJS.ProcessEnv) =>
  spawnSync('npx', ['vitest', 'run', '-c', 'vitest.odoo.config.ts', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  }).status ?? 1;

const results: string[] = [];
let failed = false;
if (process.env.ODOO_URL) {
  const started = Date.now();
  failed = vitest({}) !== 0;
  results.push(
    `ODOO_URL=${process.env.ODOO_URL}: ${failed ? 'failed' : 'passed'} in ${Math.round((Date.now() - started) / 1000)} s`,
  );
} else {
  const present = erpVersions.filter((v) => process.env[`ODOO_SRC_${v}`]);
  if (!present.length) {
    console.error(
      `npm run test:odoo: none of ${erpVersions.map((v) => `ODOO_SRC_${v}`).join(', ')} nor ODOO_URL is set.\n${ODOO_HOW_TO}`,
    );
    process.exit(2);
  }
  for (const v of erpVersions) {
    const src = process.env[`ODOO_SRC_${v}`];
    if (!src) {
      const line = `Odoo ${v}: not run, ODOO_SRC_${v} is not set`;
      console.log(`npm run test:odoo: ${line}`);
      results.push(line);
      continue;
    }
    console.log(`npm run test:odoo: Odoo ${v} from ODOO_SRC_${v}=${src}`);
    const started = Date.now();
    const status = vitest({ ODOO_SRC: src });
    failed ||= status !== 0;
    results.push(`Odoo ${v}: ${status === 0 ? 'passed' : 'failed'} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}
console.log(`real-Odoo suite finished:\n  ${results.join('\n  ')}`);
process.exit(failed ? 1 : 0);
