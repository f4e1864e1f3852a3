/** The tenant's ERP: its database on the ERP's PostgreSQL server, its dedicated API user, its tier's modules and event rules. */
import path from 'node:path';
import { ensureErpApiUser as ensureApiUser, erpApiUserDeps } from '../domain/erp/api-user.js';
import { ensureTierModules as ensureModules } from '../domain/erp/tier-modules.js';
import { eventRulesSummary } from '../domain/erp-events/automation-rules.js';
import { currentIngestionKey } from '../domain/erp-events/ingestion.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import {
  cloneTenantDatabase as cloneDatabase,
  dropTenantDatabase as dropDatabase,
  InvalidDatabaseNameError,
  removeTenantFilestore,
  TemplateMissingError,
  templateDatabaseName,
  tenantDatabaseExists,
} from '../domain/erp/tenant-database.js';
import { ApplicationFailure } from '@temporalio/common';
import { TenantErrorType, type TenantClientSpec, type Tier } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

export const createTenantErpActivities = ({ config, platformPool, erpAdminPool }: PlatformDeps) => ({
  /**
   * CREATE DATABASE "<hostname>" TEMPLATE "erp_tpl_<tier>_<version>". A missing template is not
   * a crash: the result says so (the tenant's ERP then answers 503 and the readiness deadline
   * reports it), and the next reconcile tries again.
   */
  async cloneTenantDatabase(input: { database: string; spec: TenantClientSpec }) {
    const template = templateDatabaseName(input.spec.tier, input.spec.erpVersion);
    try {
      // real Odoo: the template's filestore is copied with it, as Odoo's own duplication does
      const filestoreRoot = config.ERP_BACKEND === 'odoo' ? path.join(config.ODOO_DATA_DIR, 'filestore') : undefined;
      const outcome = await cloneDatabase(erpAdminPool, { database: input.database, template, filestoreRoot });
      return { database: input.database, template, outcome };
    } catch (err) {
      if (err instanceof TemplateMissingError)
        return { database: input.database, template, outcome: 'template-missing' as const };
      if (err instanceof InvalidDatabaseNameError)
        throw ApplicationFailure.create({
          type: TenantErrorType.InvalidName,
          message: err.message,
          nonRetryable: true,
        });
      throw err;
    }
  },

  /** DROP DATABASE … WITH (FORCE); 'absent' when it was gone already. */
  async dropTenantDatabase(input: { database: string }) {
    const outcome = await dropDatabase(erpAdminPool, input.database);
    if (config.ERP_BACKEND === 'odoo')
      removeTenantFilestore(path.join(config.ODOO_DATA_DIR, 'filestore'), input.database);
    return { database: input.database, outcome };
  },

  /** The dedicated API user with minimal rights and a long random password, stored sealed (§5.5). */
  async ensureErpApiUser(input: { tenant: string; database: string }) {
    if (!(await tenantDatabaseExists(erpAdminPool, input.database))) {
      return { login: '', created: false, outcome: 'database-missing' as const };
    }
    // through the tenant's route, as its admin, with Odoo's own models
    // (on Odoo 19+ also its API key, made or renewed: domain/erp/api-user.ts)
    const { login, created } = await ensureApiUser(erpApiUserDeps(config, platformPool), input);
    return { login, created, outcome: created ? ('created' as const) : ('exists' as const) };
  },

  /**
   * The tier's ERP modules installed in the tenant database (a tier change, DESIGN §5), as its
   * admin over XML-RPC; a downgrade uninstalls nothing (domain/erp/tier-modules.ts).
   */
  async ensureTierModules(input: { tenant: string; database: string; tier: Tier }) {
    if (!(await tenantDatabaseExists(erpAdminPool, input.database))) {
      return { installed: [], present: 0, kept: [], unavailable: [], outcome: 'database-missing' as const };
    }
    // the rules' tokens: the erp → event-ingestion pair's current key, from the secret store's record
    // (PostgreSQL, also under SECRET_STORE=kubernetes), read fresh on every reconcile, so after a
    // rotation every reconcile writes the new key's tokens
    const { key } = await currentIngestionKey(new PgSecretStore(platformPool, config.SECRETS_KEY, 0));
    const result = await ensureModules(erpApiUserDeps(config, platformPool), {
      database: input.database,
      tier: input.tier,
      eventRules: { tenant: input.tenant, eventsUrl: config.EVENTS_URL, ingestionKey: key },
    });
    const { eventRules, ...modules } = result;
    return { ...modules, eventRules: eventRules && eventRulesSummary(eventRules), outcome: 'ok' as const };
  },
});
