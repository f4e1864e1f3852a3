/** `npm run dev`'s seed gives the demo workspace a real tenant ERP, idempotently. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import { xmlRpcCall } from '../../domain/erp/client.js';
import { DEMO, seedDemo, seedDemoErp } from '../../scripts/seed.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import { erpTestConfig, startTestErp } from '../support/erp-tenant.js';

let cfg: Config;
let pool: Pool;
let erp: ErpStandIn;

beforeAll(async () => {
  cfg = await erpTestConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  erp = await startTestErp(cfg);
});
afterAll(async () => {
  await erp?.close();
  await pool?.end();
});

describe('seedDemoErp', () => {
  it('clones the demo tenant database from erp_tpl_pro_18, routes it and gives it an API user; a second run changes nothing', async () => {
    await seedDemo(pool, { adminPassword: 'demo-password-1234' });
    const first = await seedDemoErp(pool, { ...cfg, ERP_URL: erp.url });
    expect(first).toEqual({ host: `${DEMO.tenant}.${cfg.TENANT_DOMAIN}`, database: `${DEMO.tenant}.${cfg.TENANT_DOMAIN}` });
    const credentials = await pool.query('SELECT login, password_encrypted FROM tenant_erp_credentials WHERE tenant = $1', [DEMO.tenant]);
    expect(await seedDemoErp(pool, { ...cfg, ERP_URL: erp.url })).toEqual(first);
    expect((await pool.query('SELECT login, password_encrypted FROM tenant_erp_credentials WHERE tenant = $1', [DEMO.tenant])).rows).toEqual(credentials.rows);

    const route = await pool.query('SELECT namespace, database FROM tenant_routes WHERE host = $1', [first.host]);
    expect(route.rows).toEqual([{ namespace: 'plana-odoo-18', database: first.database }]);
    expect(await xmlRpcCall({ baseUrl: erp.url, host: first.host }, '/xmlrpc/2/common', 'version', [])).toMatchObject({ server_serie: '18.0' });

    const redis = new Redis(cfg.REDIS_URL);
    try {
      const kpis = await createDashboardService({ pool, redis, config: { ...cfg, ERP_URL: erp.url } }).kpis(DEMO.workspace);
      expect(kpis.erpVersion).toBe('18');
      expect(kpis.cashJournals.map((j) => j.type).sort()).toEqual(['bank', 'cash', 'credit']);
    } finally {
      await redis.del(`erp:dashboard:${DEMO.workspace}:kpis`);
      redis.disconnect();
    }
  });
});
