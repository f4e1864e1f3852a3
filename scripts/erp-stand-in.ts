/**
 * The ERP stand-in (sandbox/erp) wired to the platform, for `npm run dev`, `npm run start:erp` and
 * the tests: the platform's tenant-ingress forwarding of `/svc/saas/…` (services/tenant-ingress/
 * saas.ts) with the erp → account-api key from the secret store, and the worker's from-scratch
 * installer that runs the stand-in's `odoo-bin -i` with the modules the platform's tiers name.
 * The stand-in itself knows none of this: it speaks Odoo's protocols and is handed these pieces.
 */
import type pg from 'pg';
import type { Config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { forwardSaas } from '../services/tenant-ingress/saas.js';
import { PgSecretStore, serviceKeyFor } from '../domain/service-keys/secret-store.js';
import type { ErpInstaller } from '../domain/erp/from-scratch.js';
import { erpInstallModules } from '../domain/erp/odoo-bin.js';
import { startErpStandIn, type ErpStandIn, type ErpStandInOptions, type SaasEndpoints } from '../sandbox/erp/server.js';
import { installStandInDatabase, standInTemplateMark } from '../sandbox/erp/install.js';
import { erpInstallerFor } from '../worker/erp-installer.js';

const today = () => new Date().toISOString().slice(0, 10);

/**
 * The tenant ingress's `/svc/saas/…` on the stand-in's tenant hosts: forwarded to the account API
 * at ACCOUNT_API_URL with `key`, or else the current erp → account-api key of the secret store on `pool`.
 */
export function platformSaas(
  cfg: Pick<Config, 'ACCOUNT_API_URL' | 'SECRETS_KEY'>,
  pool: pg.Pool,
  key?: () => Promise<string>,
): SaasEndpoints {
  const forwarding = {
    accountApiUrl: cfg.ACCOUNT_API_URL,
    key: key ?? serviceKeyFor(new PgSecretStore(pool, cfg.SECRETS_KEY, 5_000), 'erp', 'account-api'),
  };
  return ({ tenant, path, req, body, res, loggedIn }) =>
    forwardSaas({ ...forwarding, loggedIn }, tenant, path, req, body, res);
}

/**
 * The stand-in on ERP_HOST:ERP_PORT (unless `opts` say otherwise) playing the tenant ingress too:
 * its `/svc/saas/…` answer from the account API (platformSaas).
 */
export async function startPlatformErpStandIn(
  cfg: Config,
  opts: Partial<Omit<ErpStandInOptions, 'saas'>> & { saasKey?: () => Promise<string> } = {},
): Promise<ErpStandIn> {
  const { saasKey, ...standInOpts } = opts;
  const secrets = createPool(cfg.DATABASE_URL, 1);
  try {
    const standIn = await startErpStandIn({
      host: cfg.ERP_HOST,
      port: cfg.ERP_PORT,
      platformDatabaseUrl: cfg.DATABASE_URL,
      erpDatabaseUrl: cfg.ERP_DATABASE_URL,
      ...standInOpts,
      saas: platformSaas(cfg, secrets, saasKey),
    });
    return {
      ...standIn,
      async close() {
        await standIn.close();
        await secrets.end();
      },
    };
  } catch (err) {
    await secrets.end();
    throw err;
  }
}

/** The worker's from-scratch installer for the stand-in: its `odoo-bin -i` with the tier's modules, the admin's password ERP_ADMIN_PASSWORD. */
export function standInErpInstaller(
  cfg: Pick<Config, 'ERP_DATABASE_URL' | 'ERP_ADMIN_PASSWORD' | 'ERP_STANDIN_MODULE_INSTALL_TIME'>,
): ErpInstaller {
  return {
    templateMark: () => standInTemplateMark(today()),
    install: ({ database, tier, version, onProgress, signal }) =>
      installStandInDatabase(cfg.ERP_DATABASE_URL, {
        database,
        tier,
        version,
        modules: erpInstallModules(tier),
        today: today(),
        adminPassword: cfg.ERP_ADMIN_PASSWORD,
        paceMs: cfg.ERP_STANDIN_MODULE_INSTALL_TIME,
        onProgress,
        signal,
      }),
  };
}

/** The installer a development or test worker gets: the stand-in's with ERP_BACKEND=standin, else production's (real Odoo). */
export const developmentErpInstaller = (cfg: Config): ErpInstaller =>
  cfg.ERP_BACKEND === 'standin' ? standInErpInstaller(cfg) : erpInstallerFor(cfg);

/** Run directly: `npm run start:erp` on ERP_HOST:ERP_PORT with the platform's configuration. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { config } = await import('../lib/config.js');
  const erp = await startPlatformErpStandIn(config());
  console.log(`ERP stand-in listening on ${erp.url}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void erp.close());
}
