/** `npm run db:migrate`: applies the numbered SQL migrations to DATABASE_URL. */
import { config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { migrate } from '../lib/migrate.js';

const pool = createPool(config().DATABASE_URL, 1);
try {
  const applied = await migrate(pool);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await pool.end();
}
