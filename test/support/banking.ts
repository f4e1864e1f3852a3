/** The account API with the banking service beside it, as the tests of bank connections run them. */
import type { Config } from '../../lib/config.js';
import { freePort } from '../../scripts/local-servers.js';
import { startBanking } from '../../services/banking/server.js';
import { startTestApi } from './api.js';

/**
 * Starts an account API that reaches a banking service on a port of its own, then that service with
 * the API's configuration: `banks` (its BANKING_BANKS, asked once the API listens) and `banking` on
 * top; `api` adds to the API's configuration. The caller closes both, in the order it needs.
 */
export async function startApiWithBanking(o: {
  banks: () => string | Promise<string>;
  api?: Record<string, string>;
  banking?: Partial<Config>;
}) {
  const bankingPort = await freePort();
  const bankingUrl = `http://127.0.0.1:${bankingPort}`;
  const api = await startTestApi({ BANKING_URL: bankingUrl, ...o.api });
  const banking = await startBanking({
    ...api.cfg,
    BANKING_PORT: bankingPort,
    BANKING_URL: bankingUrl,
    BANKING_BANKS: await o.banks(),
    ...o.banking,
  });
  return { api, banking };
}
