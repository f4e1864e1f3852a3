/**
 * A trace store that does not answer slows no request: spans leave in batches from a bounded
 * queue, and what cannot be sent is dropped. The store here accepts connections and never answers
 * (worse than one that is down: a refused connection fails at once).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { startTracing } from '../../lib/tracing.js';
import { erpTestConfig, provisionTestTenant, startTestErp, type TestTenant } from '../support/erp-tenant.js';
import { addUser, call, createKey, login } from '../support/workspace-api.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';

let blackHole: Server;
const sockets: Socket[] = [];
let cfg: Config;
let pool: Pool;
let admin: Pool;
let erp: ErpStandIn;
let api: Awaited<ReturnType<typeof startApi>>;
let tenant: TestTenant;
let token: string;

beforeAll(async () => {
  blackHole = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const { port } = blackHole.address() as { port: number };
  const store = {
    OTEL_TRACES_EXPORTER: 'zipkin',
    OTEL_EXPORTER_ZIPKIN_ENDPOINT: `http://127.0.0.1:${port}/api/v2/spans`,
  };
  const erpCfg = await erpTestConfig();
  pool = createPool(erpCfg.DATABASE_URL, 2);
  admin = createPool(erpCfg.ERP_DATABASE_URL, 2);
  erp = await startTestErp(erpCfg);
  cfg = await erpTestConfig({ ERP_URL: erp.url, ...store });
  startTracing('account-api', cfg);
  api = await startApi(cfg);
  tenant = await provisionTestTenant(cfg, pool, admin, { tier: 'pro', version: '18', erpUrl: erp.url });
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]);
  const owner = await addUser(pool, [{ workspaceId: rows[0]!.id, role: 'admin' }]);
  token = (await createKey(cfg.API_PUBLIC_URL, await login(cfg.API_PUBLIC_URL, owner), { name: 'store-down' })).token;
});

afterAll(async () => {
  await api?.close();
  await erp?.close();
  await pool?.end();
  await admin?.end();
  for (const s of sockets) s.destroy();
  blackHole?.close();
});

it('answers every call while the trace store takes the spans and never answers', async () => {
  const timings: number[] = [];
  // 200 calls over 8 s: under the workspace's rate limit, across several of the exporter's batches
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setTimeout(r, 40));
    const started = performance.now();
    const res = await call(cfg.API_PUBLIC_URL, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token });
    timings.push(performance.now() - started);
    expect(res.status).toBe(200);
  }
  // the exporter did try: its batches wait on the store that never answers
  expect(sockets.length).toBeGreaterThan(0);
  timings.sort((a, b) => a - b);
  const at = (q: number) => timings[Math.floor(q * (timings.length - 1))]!.toFixed(2);
  console.log(`kpis with the trace store not answering: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (200 calls)`);
});
