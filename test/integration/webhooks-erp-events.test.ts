/**
 * Where webhook events come from: provisioning makes the tenant ERP's automation rules (Odoo's
 * base_automation "Send Webhook Notification", domain/erp-events/automation-rules.ts); the ERP stand-in runs
 * them as Odoo does when records change through XML-RPC and posts Odoo's payload to the platform's
 * event ingestion (per-tenant token in the URL's userinfo), which lands it as a CloudEvent with
 * tenant and workspace on the events stream; the dispatcher delivers it to the workspace's endpoint.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { Redis } from 'ioredis';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { createErpClient } from '../../domain/erp/client.js';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { currentIngestionKey, ingestionToken } from '../../domain/erp-events/ingestion.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { ensureTierModules, type TierModulesResult } from '../../domain/erp/tier-modules.js';
import { erpApiUserDeps } from '../../domain/erp/api-user.js';
import { ensureEventRules } from '../../domain/erp-events/automation-rules.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import {
  accountantLogin,
  provisionTenantWithEventRules,
  queryTenantDb,
  setAccountantPassword,
  type TestTenant,
} from '../support/erp-tenant.js';
import { startReceiver, startWebhookPlatform, type Receiver, type WebhookPlatform } from '../support/webhooks.js';

let p: WebhookPlatform;
let admin: Pool;
let erp: ErpStandIn;
let tenant: TestTenant;
let receiver: Receiver;
let secret: string;
let rules: TierModulesResult;
/** The erp → event-ingestion pair's current key (the bootstrap made it): the tenants' tokens are made from it. */
let key: string;

beforeAll(async () => {
  p = await startWebhookPlatform(
    { ERP_DATABASE_URL: databaseUrl(inject('databaseUrl'), 'postgres') },
    { worker: false },
  );
  admin = createPool(p.cfg.ERP_DATABASE_URL, 2);
  key = (await currentIngestionKey(new PgSecretStore(p.pool, p.cfg.SECRETS_KEY, 0))).key;
  erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: p.cfg.DATABASE_URL,
    erpDatabaseUrl: p.cfg.ERP_DATABASE_URL,
    logger: createLogger({ level: 'silent' }),
  });
  // provisioned, then the reconcile step ensure-tier-modules: the tier's modules (base_automation among them) and the rules
  ({ tenant, modules: rules } = await provisionTenantWithEventRules(p.cfg, p.pool, admin, {
    tier: 'pro',
    version: '18',
    erpUrl: erp.url,
    ingestionKey: key,
  }));
  receiver = await startReceiver();
  ({ secret } = await p.endpointFor(tenant.workspace, receiver.url, [
    'invoice.posted',
    'payment.received',
    'stock.changed',
  ]));
});
afterAll(async () => {
  await receiver?.close();
  await erp?.close();
  await admin?.end();
  await p?.close();
});

it("provisioning made one rule per event type in the tenant's ERP, as Odoo stores them; a second run changes nothing", async () => {
  expect(rules.eventRules).toEqual({
    created: ['invoice.posted', 'payment.received', 'stock.changed'],
    updated: [],
    unchanged: [],
    skipped: [],
  });
  const rows = await queryTenantDb<{
    name: string;
    trigger: string;
    pre: string;
    post: string;
    action: string;
    url: string;
    fields: string[];
  }>(
    p.cfg,
    tenant.database,
    `SELECT a.name, a.trigger, a.filter_pre_domain AS pre, a.filter_domain AS post, s.name AS action, s.webhook_url AS url,
            ARRAY(SELECT f.name FROM ir_act_server_webhook_field_rel r JOIN ir_model_fields f ON f.id = r.field_id WHERE r.server_id = s.id ORDER BY 1) AS fields
       FROM base_automation a JOIN ir_act_server s ON s.base_automation_id = a.id ORDER BY a.name`,
  );
  expect(rows.map((r) => r.name)).toEqual(['Plana: invoice.posted', 'Plana: payment.received', 'Plana: stock.changed']);
  expect(rows[0]).toMatchObject({
    trigger: 'on_create_or_write',
    pre: "[('state', '!=', 'posted')]",
    action: 'Send Webhook Notification',
  });
  expect(rows[0]!.fields).toContain('amount_total');
  const url = new URL(rows[0]!.url);
  expect(url.pathname).toBe(`/api/v1/ingest/odoo/${tenant.name}/invoice.posted`);
  expect(url.username).toBe(tenant.name);
  expect(url.password).toBe(ingestionToken(key, tenant.name));

  const again = await ensureTierModules(erpApiUserDeps(p.cfg, p.pool, erp.url), {
    database: tenant.database,
    tier: 'pro',
    eventRules: { tenant: tenant.name, eventsUrl: p.cfg.EVENTS_URL, ingestionKey: key },
  });
  expect(again.eventRules).toMatchObject({
    created: [],
    updated: [],
    unchanged: ['invoice.posted', 'payment.received', 'stock.changed'],
  });
});

it(
  'an invoice posted and then paid through XML-RPC reaches the endpoint as invoice.posted and payment.received',
  { timeout: 60_000 },
  async () => {
    // an accountant's change (the platform's own API user only reads): the tenant admin, with a password we set
    await setAccountantPassword(p.cfg, tenant);
    const client = createErpClient(accountantLogin(erp.url, tenant));
    const [draft] = await queryTenantDb<{ id: number; name: string }>(
      p.cfg,
      tenant.database,
      `SELECT id, name FROM account_move WHERE move_type = 'out_invoice' ORDER BY id LIMIT 1`,
    );
    await queryTenantDb(
      p.cfg,
      tenant.database,
      `UPDATE account_move SET state = 'draft', payment_state = 'not_paid' WHERE id = $1`,
      [draft!.id],
    );

    await client.executeKw('account.move', 'write', [[draft!.id], { state: 'posted' }]);
    await client.executeKw('account.move', 'write', [[draft!.id], { payment_state: 'paid' }]);

    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(2);
    const payloads = receiver.received.map(
      (r) =>
        new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
          type: string;
          data: { id: number };
        },
    );
    expect(payloads.map((x) => x.type).sort()).toEqual(['invoice.posted', 'payment.received']);
    expect(payloads.every((x) => x.data.id === draft!.id)).toBe(true);

    // on the stream: CloudEvents with tenant and workspace
    const redis = new Redis(p.cfg.REDIS_URL);
    try {
      const stream = (await redis.xrange(p.cfg.EVENTS_STREAM, '-', '+')) as [string, string[]][];
      const events = stream.map(([, f]) => JSON.parse(f[f.indexOf('event') + 1]!));
      expect(events.find((e) => e.type === 'invoice.posted')).toMatchObject({
        source: `/erp/${tenant.name}`,
        tenant: tenant.name,
        workspace: tenant.workspace,
        specversion: '1.0',
      });
    } finally {
      redis.disconnect();
    }
  },
);

it('a stock move set to done reaches the endpoint as stock.changed', { timeout: 60_000 }, async () => {
  const before = receiver.received.length;
  await setAccountantPassword(p.cfg, tenant);
  const client = createErpClient(accountantLogin(erp.url, tenant));
  const moveId = await client.executeKw<number>('stock.move', 'create', [
    {
      reference: 'WH/OUT/00042',
      product_id: 7,
      product_uom_qty: 3,
      quantity: 3,
      location_id: 8,
      location_dest_id: 5,
      state: 'assigned',
      company_id: 1,
    },
  ]);
  await client.executeKw('stock.move', 'write', [[moveId], { state: 'done' }]);
  await client.executeKw('stock.move', 'write', [[moveId], { quantity: 3 }]); // done already: no second event
  await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 1);
  const payload = new Webhook(secret).verify(
    receiver.received.at(-1)!.body,
    receiver.received.at(-1)!.headers as Record<string, string>,
  ) as { type: string; data: Record<string, unknown> };
  expect(payload).toMatchObject({
    type: 'stock.changed',
    data: { id: moveId, reference: 'WH/OUT/00042', quantity: 3, locationId: 8, locationDestId: 5 },
  });
});

it('a rule someone changed in the ERP is repaired by the next reconcile', async () => {
  await queryTenantDb(
    p.cfg,
    tenant.database,
    `UPDATE ir_act_server SET webhook_url = 'http://example.invalid/hook' WHERE name = 'Send Webhook Notification' AND id = (SELECT min(id) FROM ir_act_server)`,
  );
  await queryTenantDb(
    p.cfg,
    tenant.database,
    `UPDATE base_automation SET active = false WHERE name = 'Plana: payment.received'`,
  );
  await setAccountantPassword(p.cfg, tenant);
  const { openErpSession } = await import('../../domain/erp/client.js');
  const session = await openErpSession(accountantLogin(erp.url, tenant));
  const repaired = await ensureEventRules(session, {
    tenant: tenant.name,
    eventsUrl: p.cfg.EVENTS_URL,
    ingestionKey: key,
  });
  expect(repaired.updated.sort()).toEqual(['invoice.posted', 'payment.received']);
  expect(repaired.unchanged).toEqual(['stock.changed']);
});

it("ingestion refuses a token of another tenant, a missing one, one of a key the registry does not accept (401), and a payload that is not the event's change (400)", async () => {
  const post = (
    auth: string | undefined,
    body: unknown = { _model: 'account.move', _id: 1, _action: 'x', state: 'posted' },
  ) =>
    fetch(new URL(`/api/v1/ingest/odoo/${tenant.name}/invoice.posted`, p.cfg.EVENTS_URL), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify(body),
    });
  const basic = (t: string) => `Basic ${Buffer.from(`${tenant.name}:${t}`).toString('base64')}`;
  const other = ingestionToken(key, 'some-other-tenant');
  expect((await post(basic(other))).status).toBe(401);
  expect((await post(undefined)).status).toBe(401);
  // the token of a key the registry does not know
  expect((await post(basic(ingestionToken(randomBytes(32).toString('base64'), tenant.name)))).status).toBe(401);
  const own = ingestionToken(key, tenant.name);
  const wrongModel = await post(basic(own), { _model: 'res.partner', _id: 1 });
  expect(wrongModel.status).toBe(400);
  expect(await wrongModel.json()).toMatchObject({ detail: expect.stringContaining('account.move') });
  expect((await post(basic(own), { _model: 'account.move', _id: 1, state: 'draft' })).status).toBe(400);
});
