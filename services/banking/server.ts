/** Starts the banking service (§4.2, BANKING_PORT, default 3200); returns a function that stops it. */
import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { adaptersFromConfig } from '../../domain/banking/nextgenpsd2.js';
import { buildBankingApp } from './app.js';
import { runAsMain } from '../../lib/service-app.js';

export const BANKING_TARGET = 'banking';

export async function startBanking(cfg = config()) {
  const pool = createPool(cfg.DATABASE_URL, 5);
  const serviceKeys = await startServiceKeyVerifier(BANKING_TARGET, pool, cfg);
  const app = await buildBankingApp({
    pool,
    secretsKey: cfg.SECRETS_KEY,
    adapters: adaptersFromConfig(cfg.BANKING_BANKS, cfg.BANKING_BANK_TIMEOUT_MS),
    serviceKeys,
    logLevel: cfg.LOG_LEVEL,
  });
  const url = await app.listen({ host: cfg.BANKING_HOST, port: cfg.BANKING_PORT });
  let closing: Promise<void> | undefined;
  return {
    app,
    url,
    /** Stops the service (once; later calls wait for the first). */
    close() {
      closing ??= (async () => {
        await app.close();
        await serviceKeys.close();
        await pool.end();
      })();
      return closing;
    },
  };
}

await runAsMain(import.meta.url, 'banking', () => startBanking());
