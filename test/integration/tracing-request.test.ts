/**
 * From a customer's error to its story: a Workspace API call whose tenant ERP does not answer gets
 * a problem body whose requestId is a trace id; Zipkin's trace of that id holds the API's span and
 * the ERP call that failed, with its error; and `npm run cli -- logs <workspace> --request <id>`
 * finds the call's execution-log line in the log store.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startApi } from '../../api/server.js';
import { runCli } from '../../cli/index.js';
import { shipExecutionLog } from '../../domain/access/execution-log-mirror.js';
import type { StoredCall } from '../../domain/access/execution-log-store.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { Tracing } from '../../lib/tracing.js';
import { erpTestConfig, provisionTestTenant, startTestErp, type TestTenant } from '../support/erp-tenant.js';
import { spanNames, startTestTracing, zipkinTrace } from '../support/traces.js';
import { testKeys } from '../support/service-keys.js';
import { addUser, call, createKey, login } from '../support/workspace-api.js';
import { inject } from 'vitest';

let tracing: Tracing;
let cfg: Config;
let pool: Pool;
let admin: Pool;
let api: Awaited<ReturnType<typeof startApi>>;
let tenant: TestTenant;
let key: { token: string; prefix: string };

beforeAll(async () => {
  tracing = startTestTracing();
  const erpCfg = await erpTestConfig();
  pool = createPool(erpCfg.DATABASE_URL, 2);
  admin = createPool(erpCfg.ERP_DATABASE_URL, 2);
  const erp = await startTestErp(erpCfg);
  cfg = await erpTestConfig({ ERP_URL: erp.url, ...inject('zipkinEnv') });
  api = await startApi(cfg);
  tenant = await provisionTestTenant(cfg, pool, admin, { tier: 'pro', version: '18', erpUrl: erp.url });
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]);
  const owner = await addUser(pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]);
  key = await createKey(cfg.API_PUBLIC_URL, await login(cfg.API_PUBLIC_URL, owner), { name: 'traced' });
  // the operator's CLI talks to this API
  process.env.PLANA_API_URL = cfg.API_PUBLIC_URL;
  process.env.OPS_API_KEY = testKeys.operator;
  // the tenant's ERP goes away: the next dashboard read cannot reach it
  await erp.close();
});

afterAll(async () => {
  delete process.env.PLANA_API_URL;
  delete process.env.OPS_API_KEY;
  await api?.close();
  await pool?.end();
  await admin?.end();
});

it("leads from a failed call's requestId to its trace (the API's span, the failing ERP call) and its execution-log line in the store", async () => {
  const res = await call(cfg.API_PUBLIC_URL, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: key.token });
  expect(res.status).toBe(503);
  const requestId = res.body.requestId as string;
  expect(requestId).toMatch(/^[0-9a-f]{32}$/);

  const spans = await zipkinTrace(tracing, requestId, (s) => s.some((span) => span.kind === 'CLIENT'));
  const server = spans.find((s) => s.kind === 'SERVER')!;
  expect(server.name).toBe('get /api/portal/odoo/:slug/kpis');
  expect(server.tags).toMatchObject({ 'http.response.status_code': '503', 'plana.workspace': tenant.workspace });
  const erpCall = spans.find((s) => s.kind === 'CLIENT')!;
  expect(erpCall.parentId).toBe(server.id);
  expect(erpCall.tags?.['url.path']).toBe('/xmlrpc/2/common');
  expect(erpCall.tags?.error).toMatch(/ECONNREFUSED/);
  expect(spanNames(spans)).toHaveLength(2);

  // the same id finds the call's line in the execution log of the log store, in one command
  const lines = await vi.waitFor(
    async () => {
      await shipExecutionLog(pool, cfg.LOG_STORE_URL!); // what the worker's mirror does every second
      const found = JSON.parse(
        await cli(['logs', tenant.workspace, '--request', requestId, '-o', 'json']),
      ) as StoredCall[];
      if (!found.length) throw new Error('the call is not in the log store yet');
      return found;
    },
    { timeout: 30_000, interval: 250 },
  );
  expect(lines).toEqual([expect.objectContaining({ requestId, status: 503, method: 'GET', keyPrefix: key.prefix })]);
  expect(lines[0]!.route).toContain('/kpis');
});

/** What `npm run cli -- <args>` prints; fails when it exits with an error. */
async function cli(args: string[]): Promise<string> {
  let out = '';
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (out += `${a.join(' ')}\n`));
  try {
    expect(await runCli(args)).toBe(0);
    return out;
  } finally {
    log.mockRestore();
  }
}
