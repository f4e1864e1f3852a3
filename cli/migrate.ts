/**
 * `npm run db:migrate`, and the migrate container's and Job's command (an operator's one-shot task
 * of the production image, so it lives here and not in scripts/): applies the numbered SQL migrations to
 * DATABASE_URL, then gives every platform caller → target pair without one a service key
 * (registry + the PostgreSQL secret store; domain/service-keys/bootstrap.ts) and, with
 * SECRET_STORE=kubernetes, publishes the current keys to the Kubernetes Secrets.
 */
import { config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';
import { ensureServiceKeys } from '../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import { publishCurrentKeys } from '../domain/service-keys/secret-store-factory.js';

const pool = createPool(config().DATABASE_URL, 1);
try {
  const applied = await migrate(pool);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  const created = await ensureServiceKeys(pool, new PgSecretStore(pool, config().SECRETS_KEY));
  if (created.length)
    console.log(`service keys created: ${created.map((k) => `${k.caller}→${k.target} ${k.keyId}`).join(', ')}`);
  // SECRET_STORE=kubernetes: each pair's current key goes to its Secret too (idempotent)
  const published = await publishCurrentKeys(config(), pool);
  if (published) console.log(`service keys published to Kubernetes Secrets: ${published} pairs`);
} finally {
  await pool.end();
}
