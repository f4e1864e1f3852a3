/**
 * Where webhook events come from: the ERP stand-in, changed through XML-RPC, posts the change to
 * the platform's event ingestion (per-tenant token), which lands it as a CloudEvent with tenant
 * and workspace on the events stream; the dispatcher delivers it to the workspace's endpoint.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { Redis } from 'ioredis';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { createErpClient } from '../../domain/erp/client.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { ingestionKey, ingestionToken } from '../../domain/webhooks/ingestion.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import { provisionTestTenant, queryTenantDb, type TestTenant } from '../support/erp-tenant.js';
import { startReceiver, startWebhookPlatform, type Receiver, type WebhookPlatform } from '../support/webhooks.js';
import { addUser, call, login } from '../support/workspace-api.js';

let p: WebhookPlatform;
let admin: Pool;
let erp: ErpStandIn;
let tenant: TestTenant;
let receiver: Receiver;
let secret: string;

beforeAll(async () => {
  p = await startWebhookPlatform({ ERP_DATABASE_URL: databaseUrl(inject('databaseUrl'), 'postgres') }, { worker: false });
  admin = createPool(p.cfg.ERP_DATABASE_URL, 2);
  const key = ingestionKey(p.cfg.SECRETS_KEY);
  erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: p.cfg.DATABASE_URL,
    erpDatabaseUrl: p.cfg.ERP_DATABASE_URL,
    logger: createLogger({ level: 'silent' }),
    events: { url: p.cfg.EVENTS_URL, token: (t) => ingestionToken(key, t) },
  });
  tenant = await provisionTestTenant(p.cfg, p.pool, admin, { tier: 'pro', version: '18', erpUrl: erp.url });
  receiver = await startReceiver();
  const ws = (await p.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace])).rows[0]!;
  const user = await addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]);
  const token = await login(p.base, user);
  const res = await call(p.base, 'POST', '/api/portal/webhooks', { token, headers: { 'x-workspace': tenant.workspace }, body: { url: receiver.url, eventTypes: ['invoice.posted', 'payment.received'] } });
  expect(res.status).toBe(201);
  secret = res.body.secret;
});
afterAll(async () => {
  await receiver?.close();
  await erp?.close();
  await admin?.end();
  await p?.close();
});

it('an invoice posted and then paid through XML-RPC reaches the endpoint as invoice.posted and payment.received', { timeout: 60_000 }, async () => {
  // an accountant's change (the platform's own API user only reads): the tenant admin, with a password we set
  await queryTenantDb(p.cfg, tenant.database, `UPDATE res_users SET password = $1 WHERE login = 'admin'`, [hashOdooPassword('accountant-pw')]);
  const client = createErpClient({ baseUrl: erp.url, host: tenant.host, db: tenant.database, login: 'admin', password: 'accountant-pw' });
  const [draft] = await queryTenantDb<{ id: number; name: string }>(p.cfg, tenant.database, `SELECT id, name FROM account_move WHERE move_type = 'out_invoice' ORDER BY id LIMIT 1`);
  await queryTenantDb(p.cfg, tenant.database, `UPDATE account_move SET state = 'draft', payment_state = 'not_paid' WHERE id = $1`, [draft!.id]);

  await client.executeKw('account.move', 'write', [[draft!.id], { state: 'posted' }]);
  await client.executeKw('account.move', 'write', [[draft!.id], { payment_state: 'paid' }]);

  await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(2);
  const payloads = receiver.received.map((r) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { type: string; data: { id: number } });
  expect(payloads.map((x) => x.type).sort()).toEqual(['invoice.posted', 'payment.received']);
  expect(payloads.every((x) => x.data.id === draft!.id)).toBe(true);

  // on the stream: CloudEvents with tenant and workspace
  const redis = new Redis(p.cfg.REDIS_URL);
  try {
    const stream = (await redis.xrange(p.cfg.EVENTS_STREAM, '-', '+')) as [string, string[]][];
    const events = stream.map(([, f]) => JSON.parse(f[f.indexOf('event') + 1]!));
    expect(events.find((e) => e.type === 'invoice.posted')).toMatchObject({ source: `/erp/${tenant.name}`, tenant: tenant.name, workspace: tenant.workspace, specversion: '1.0' });
  } finally {
    redis.disconnect();
  }
});

it('ingestion refuses a token of another tenant and a missing one (401), so no tenant can post as another', async () => {
  const other = ingestionToken(ingestionKey(p.cfg.SECRETS_KEY), 'some-other-tenant');
  const post = (auth?: string) =>
    fetch(new URL(`/api/v1/ingest/erp/${tenant.name}`, p.cfg.EVENTS_URL), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify({ type: 'invoice.posted', id: 'x:1', data: {} }),
    });
  expect((await post(`Bearer ${other}`)).status).toBe(401);
  expect((await post()).status).toBe(401);
});
