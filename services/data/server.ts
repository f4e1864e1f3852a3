import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import { WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { buildDataApp, DATA_TARGET } from './app.js';
import { runAsMain, stopInOrder } from '../../lib/service-app.js';

/** Starts the data service; returns a function that stops it. */
export async function startData(cfg = config()) {
  const pool = createPool(cfg.DATABASE_URL, 5);
  const serviceKeys = await startServiceKeyVerifier(DATA_TARGET, pool, cfg);
  const app = await buildDataApp({
    pool,
    serviceKeys,
    grants: new WorkspaceGrants(cfg.SECRETS_KEY),
    dashboards: createDashboardService({ pool, config: cfg }),
    logLevel: cfg.LOG_LEVEL,
  });
  const url = await app.listen({ host: cfg.DATA_HOST, port: cfg.DATA_PORT });
  return {
    app,
    url,
    close: stopInOrder(
      () => app.close(),
      () => serviceKeys.close(),
      () => pool.end(),
    ),
  };
}

await runAsMain(import.meta.url, 'data', () => startData());
