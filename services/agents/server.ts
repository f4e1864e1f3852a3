import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { serviceKeysLog, startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { PgSecretStore, serviceKeyFor } from '../../domain/service-keys/secret-store.js';
import { holderOptions, reportingStore } from '../../domain/service-keys/holders.js';
import { createDataClient } from '../../domain/agents/data-client.js';
import { createModel } from '../../domain/agents/runner.js';
import { WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { AGENTS_TARGET, buildAgentsApp } from './app.js';
import { runAsMain, stopInOrder } from '../../lib/service-app.js';

/** Starts the agents service; returns a function that stops it. */
export async function startAgents(cfg = config()) {
  const pool = createPool(cfg.DATABASE_URL, 5);
  const serviceKeys = await startServiceKeyVerifier(AGENTS_TARGET, pool, cfg);
  // its own key for the data service, read from the secret store per call (a rotation reaches it
  // without a restart), and reported to the data service while held (a rotation's switch proof)
  const secrets = reportingStore(
    new PgSecretStore(pool, cfg.SECRETS_KEY, cfg.SERVICE_KEY_SECRET_TTL_MS),
    holderOptions(cfg, {
      stopped: () => pool.ended,
      log: serviceKeysLog(cfg),
    }),
  );
  const app = await buildAgentsApp({
    pool,
    serviceKeys,
    grants: new WorkspaceGrants(cfg.SECRETS_KEY),
    model: createModel(cfg),
    data: createDataClient({ baseUrl: cfg.DATA_URL, key: serviceKeyFor(secrets, AGENTS_TARGET, 'data') }),
    maxToolRounds: cfg.AGENTS_MAX_TOOL_ROUNDS,
    logLevel: cfg.LOG_LEVEL,
  });
  const url = await app.listen({ host: cfg.AGENTS_HOST, port: cfg.AGENTS_PORT });
  return {
    app,
    url,
    close: stopInOrder(
      () => secrets.close(),
      () => app.close(),
      () => serviceKeys.close(),
      () => pool.end(),
    ),
  };
}

await runAsMain(import.meta.url, 'agents', () => startAgents());
