/** What a crash test holds a table's lock for: to know a step is inside its statement. */
import type { Pool } from '../../lib/db.js';

/** How many statements wait for a lock on `table` (rows of pg_locks not granted). */
export async function lockWaiters(pool: Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_locks WHERE relation = $1::regclass AND NOT granted',
    [table],
  );
  return rows[0]!.n;
}
