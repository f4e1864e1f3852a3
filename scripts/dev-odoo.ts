/**
 * `ERP_BACKEND=odoo npm run dev`: the real Odoo 18 behind the tenant ingress. With ODOO_SRC set,
 * the dev command builds the template it clones tenants from and starts Odoo itself at
 * ODOO_UPSTREAM_URL, with the real-Odoo suite's code (scripts/odoo-templates.ts,
 * scripts/odoo-server.ts). Without it, an Odoo must answer at ODOO_UPSTREAM_URL with the template
 * built; otherwise it stops with what is missing and what to run. The other tiers' templates
 * follow while the platform runs (buildDevOdooTemplates).
 */
import type { Config } from '../lib/config.js';
import { templateDatabaseName } from '../domain/erp/tenant-database.js';
import { tiers, type ErpVersion, type Tier } from '../domain/tenants/types.js';
import { ensureOdooTemplate, odooRuntimeOf, odooTemplateTiers, type OdooRuntime } from './odoo-templates.js';
import { odooAnswers, startOdoo, type OdooServer } from './odoo-server.js';

export class OdooNotAvailable extends Error {
  override name = 'OdooNotAvailable';
}

type OdooConfig = Pick<Config, 'ODOO_UPSTREAM_URL' | 'ERP_DATABASE_URL' | 'ODOO_DATA_DIR' | 'ERP_ADMIN_PASSWORD'>;

/** The dev command's tenants run the default ERP version, so its Odoo is that version. */
const DEV_ERP_VERSION: ErpVersion = '18';

function odooRuntime(cfg: OdooConfig, odooSrc: string): OdooRuntime {
  const runtime = odooRuntimeOf(odooSrc, cfg.ODOO_DATA_DIR);
  if (runtime.version !== DEV_ERP_VERSION)
    throw new OdooNotAvailable(
      `ODOO_SRC=${odooSrc} is Odoo ${runtime.version}: npm run dev runs ERP ${DEV_ERP_VERSION} (the default), so it needs Odoo ${DEV_ERP_VERSION}.0`,
    );
  return runtime;
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/**
 * Makes sure a real Odoo answers at ODOO_UPSTREAM_URL with the `tier` template: started here from
 * `odooSrc` (answered, to be closed with the platform), or one already running (undefined).
 */
export async function ensureDevOdoo(
  cfg: OdooConfig,
  opts: { odooSrc?: string; tier: Tier; log?: (msg: string) => void },
): Promise<OdooServer | undefined> {
  const template = templateDatabaseName(opts.tier, DEV_ERP_VERSION);
  if (opts.odooSrc) {
    const runtime = odooRuntime(cfg, opts.odooSrc);
    opts.log?.(
      `building the Odoo template ${template} if missing (ODOO_SRC=${opts.odooSrc}; the first build takes minutes)`,
    );
    const built = await ensureOdooTemplate(runtime, {
      erpDatabaseUrl: cfg.ERP_DATABASE_URL,
      tier: opts.tier,
      adminPassword: cfg.ERP_ADMIN_PASSWORD,
    });
    if (built.ms) opts.log?.(`Odoo built ${template} in ${seconds(built.ms)}`);
    if (await odooAnswers(cfg.ODOO_UPSTREAM_URL))
      throw new OdooNotAvailable(
        `ODOO_SRC is set, but something already answers at ODOO_UPSTREAM_URL=${cfg.ODOO_UPSTREAM_URL}: stop it, or unset ODOO_SRC to use it.`,
      );
    opts.log?.(`starting Odoo 18 at ${cfg.ODOO_UPSTREAM_URL}`);
    return startOdoo({
      runtime,
      erpDatabaseUrl: cfg.ERP_DATABASE_URL,
      port: Number(new URL(cfg.ODOO_UPSTREAM_URL).port),
    });
  }
  if (!(await odooAnswers(cfg.ODOO_UPSTREAM_URL))) {
    throw new OdooNotAvailable(
      `ERP_BACKEND=odoo needs Odoo 18, and none answers at ODOO_UPSTREAM_URL=${cfg.ODOO_UPSTREAM_URL} (GET /web/health), and ODOO_SRC is not set. ` +
        'Either set ODOO_SRC to a folder holding odoo-bin (Odoo 18.0 Community): `ERP_BACKEND=odoo ODOO_SRC=/path/to/odoo npm run dev` builds the template and starts Odoo itself; ' +
        `or start Odoo 18 there yourself (odoo-bin --db-filter=^%h$ on ERP_DATABASE_URL's server) after \`ODOO_SRC=/path/to/odoo npm run odoo:templates\`; ` +
        'or drop ERP_BACKEND=odoo to use the ERP stand-in.',
    );
  }
  if (!(await odooTemplateTiers(cfg.ERP_DATABASE_URL, DEV_ERP_VERSION)).includes(opts.tier)) {
    throw new OdooNotAvailable(
      `Odoo answers at ${cfg.ODOO_UPSTREAM_URL}, but the template ${template} the demo tenant is cloned from has not been built by Odoo on ERP_DATABASE_URL's server: build it with \`ODOO_SRC=/path/to/odoo npm run odoo:templates\` (or set ODOO_SRC for npm run dev to do it).`,
    );
  }
  return undefined;
}

/**
 * The templates of the other tiers, so that a tenant of any tier (examples/tenant-acme.yaml is
 * `pro`) becomes Ready on this Odoo: built one after the other from `odooSrc` while the platform
 * runs (a tenant applied meanwhile retries its clone until its template is there), each said when
 * built; without `odooSrc`, says which are missing and how to build them. `signal` stops a build.
 */
export async function buildDevOdooTemplates(
  cfg: OdooConfig,
  opts: { odooSrc?: string; log: (msg: string) => void; signal?: AbortSignal },
): Promise<void> {
  const present = await odooTemplateTiers(cfg.ERP_DATABASE_URL, DEV_ERP_VERSION);
  const missing = tiers.filter((tier) => !present.includes(tier));
  if (!missing.length) return;
  const names = missing.map((tier) => templateDatabaseName(tier, DEV_ERP_VERSION)).join(', ');
  if (!opts.odooSrc) {
    opts.log(
      `no Odoo template for ${missing.join(', ')} (${names}): tenants of those tiers wait for it; build with \`TIERS=${missing.join(',')} ODOO_SRC=/path/to/odoo npm run odoo:templates\``,
    );
    return;
  }
  const runtime = odooRuntime(cfg, opts.odooSrc);
  opts.log(
    `building the Odoo templates ${names} while the platform runs (a tenant of those tiers is Ready once its template is built)`,
  );
  for (const tier of missing) {
    const template = templateDatabaseName(tier, DEV_ERP_VERSION);
    try {
      const built = await ensureOdooTemplate(runtime, {
        erpDatabaseUrl: cfg.ERP_DATABASE_URL,
        tier,
        adminPassword: cfg.ERP_ADMIN_PASSWORD,
        signal: opts.signal,
      });
      opts.log(`Odoo built ${template} in ${seconds(built.ms)}`);
    } catch (err) {
      if (opts.signal?.aborted) return;
      opts.log(`Odoo could not build ${template}: ${(err as Error).message.slice(0, 2_000)}`);
    }
  }
}
