/**
 * Local development only: prints the current key a caller sends to a target, from the local secret
 * store, for a hand-written curl:
 *
 *   OPS_API_KEY=$(npx tsx scripts/service-key.ts operator account-api)
 *
 * Refuses with NODE_ENV=production. Nothing else in the platform prints a key.
 */
import { config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';

const [caller, target] = process.argv.slice(2);
const cfg = config();
if (!caller || !target) {
  console.error(
    'usage: npx tsx scripts/service-key.ts <caller> <target>   (npm run cli -- service-keys lists the pairs)',
  );
  process.exit(2);
}
if (cfg.NODE_ENV === 'production') {
  console.error('refused: keys are not printed in production');
  process.exit(1);
}
const pool = createPool(cfg.DATABASE_URL, 1);
try {
  process.stdout.write(`${(await new PgSecretStore(pool, cfg.SECRETS_KEY).current(caller, target)).key}\n`);
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
