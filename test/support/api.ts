/** An account API on the run's real servers, as most integration tests start one. */
import { startApi } from '../../api/server.js';
import { createPool } from '../../lib/db.js';
import { testConfig } from './env.js';

/**
 * Starts an account API with its own port (configuration `overrides` on top of the test
 * defaults), plus a small pool for the test's own queries; `close()` stops both.
 */
export async function startTestApi(overrides: Record<string, string> = {}) {
  const cfg = await testConfig(overrides);
  const pool = createPool(cfg.DATABASE_URL, 2);
  const api = await startApi(cfg);
  return {
    cfg,
    pool,
    app: api.app,
    base: cfg.API_PUBLIC_URL,
    async close() {
      await api.close();
      await pool.end();
    },
  };
}

export type TestApi = Awaited<ReturnType<typeof startTestApi>>;
