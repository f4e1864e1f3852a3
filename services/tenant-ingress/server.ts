import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { serviceKeysLog } from '../../domain/service-keys/service-verifier.js';
import { PgSecretStore, serviceKeyFor } from '../../domain/service-keys/secret-store.js';
import { holderOptions, reportingStore } from '../../domain/service-keys/holders.js';
import { buildTenantIngress, ERP_SESSION_KEY_PURPOSE } from './app.js';
import { purposeKey } from '../../lib/secret-box.js';
import { unservedDatabaseReason } from '../../domain/erp/from-scratch.js';
import { sessionAtErp } from './saas.js';
import { runAsMain } from '../../lib/service-app.js';

/**
 * Starts the tenant ingress at ERP_HOST:ERP_PORT in front of the Odoo at ODOO_UPSTREAM_URL; the
 * /svc/saas/… reads of a caller logged in to the tenant's Odoo go to the account API with the ERP
 * entry's key (erp → account-api, from the secret store, reloaded as it rotates). `close()` stops it.
 */
export async function startTenantIngress(cfg = config()) {
  const platform = createPool(cfg.DATABASE_URL, 4);
  // the ERP's PostgreSQL server: whether a route's database is there (its /web/health answers 503 if not)
  const erpAdmin = createPool(cfg.ERP_DATABASE_URL, 2);
  // the ERP entry's key, reported to the account API while held (a rotation's switch proof)
  const secrets = reportingStore(
    new PgSecretStore(platform, cfg.SECRETS_KEY, 5_000),
    holderOptions(cfg, {
      stopped: () => platform.ended,
      log: serviceKeysLog(cfg),
    }),
  );
  const app = await buildTenantIngress({
    platform,
    upstream: cfg.ODOO_UPSTREAM_URL,
    saas: {
      accountApiUrl: cfg.ACCOUNT_API_URL,
      key: serviceKeyFor(secrets, 'erp', 'account-api'),
      loggedIn: sessionAtErp(cfg.ODOO_UPSTREAM_URL),
    },
    unservedReason: (database) => unservedDatabaseReason(erpAdmin, database),
    sessionKey: purposeKey(cfg.SECRETS_KEY, ERP_SESSION_KEY_PURPOSE),
    logLevel: cfg.LOG_LEVEL,
  });
  await app.listen({ host: cfg.ERP_HOST, port: cfg.ERP_PORT });
  return {
    url: `http://${cfg.ERP_HOST}:${cfg.ERP_PORT}`,
    async close() {
      secrets.close();
      await app.close();
      await platform.end();
      await erpAdmin.end();
    },
  };
}

await runAsMain(import.meta.url, 'tenant-ingress', () => startTenantIngress());
