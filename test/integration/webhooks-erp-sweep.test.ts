/**
 * Nothing lost when the ERP's post is: Odoo posts a change once, 1 s timeout, never again. The
 * catch-up sweep (schedule erp-events-sweep, domain/erp-events/sweep.ts) reads what the tenant
 * ERPs changed and publishes the events the platform has not seen, with the same ids, so a change
 * posted and swept is delivered once. On the real Temporal schedule and worker, PostgreSQL, Redis,
 * the ERP stand-in running the tenant's automation rules, and a real HTTP receiver.
 */
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createPool, type Pool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { createErpClient, openErpSession, type ErpClient } from '../../domain/erp/client.js';
import { ensureEventRules } from '../../domain/erp-events/automation-rules.js';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { currentIngestionKey } from '../../domain/erp-events/ingestion.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { ensureErpEventSweepSchedule } from '../../domain/erp-events/sweep.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import {
  accountantLogin,
  provisionTenantWithEventRules,
  queryTenantDb,
  setAccountantPassword,
  type TestTenant,
} from '../support/erp-tenant.js';
import { startReceiver, startWebhookPlatform, type Receiver, type WebhookPlatform } from '../support/webhooks.js';
import { runScheduleNow } from '../support/schedules.js';

let p: WebhookPlatform;
let admin: Pool;
let erp: ErpStandIn;
let tenant: TestTenant;
let receiver: Receiver;
let secret: string;
let accountant: ErpClient;
const scheduleId = `erp-events-sweep-${randomUUID().slice(0, 8)}`;

/** One run of the real schedule's workflow (after the settle time, ERP_EVENTS_SWEEP_SETTLE 1 s here); its result. */
async function sweep(): Promise<{
  tenants: number;
  published: number;
  baselines: number;
  failed: { tenant: string; error: string }[];
}> {
  await new Promise((r) => setTimeout(r, 2100)); // write_date has whole seconds
  return runScheduleNow(p.temporal, scheduleId);
}

/** This tenant's sweep record (the platform database is shared with other test files' tenants: the sweep reads them all). */
async function ours(): Promise<{ published: number; sweptAt: Date } | undefined> {
  const { rows } = await p.pool.query<{ published: string; swept_at: Date }>(
    'SELECT published, swept_at FROM erp_event_sweeps WHERE tenant = $1',
    [tenant.name],
  );
  return rows[0] && { published: Number(rows[0].published), sweptAt: rows[0].swept_at };
}
/** One sweep; what it published for this tenant. */
async function sweepOurs(): Promise<number> {
  const before = (await ours())?.published ?? 0;
  const result = await sweep();
  expect(result.failed.map((f) => f.tenant)).not.toContain(tenant.name);
  return (await ours())!.published - before;
}

const delivered = () =>
  receiver.received.map(
    (r) =>
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { type: string; data: { id: number } },
  );

/** A draft customer invoice of the demo data, as a fresh draft. */
async function draftInvoice(): Promise<number> {
  const [row] = await queryTenantDb<{ id: number }>(
    p.cfg,
    tenant.database,
    `UPDATE account_move SET state = 'draft', payment_state = 'not_paid'
      WHERE id = (SELECT id FROM account_move WHERE move_type = 'out_invoice' AND state = 'draft' ORDER BY id LIMIT 1) RETURNING id`,
  );
  return row!.id;
}

/** The rule's webhook now points at a closed port: Odoo's post is lost (as when the events service is down). */
const breakRule = (type: string) =>
  queryTenantDb(
    p.cfg,
    tenant.database,
    `UPDATE ir_act_server SET webhook_url = 'http://127.0.0.1:9/lost' WHERE base_automation_id = (SELECT id FROM base_automation WHERE name = $1)`,
    [`Plana: ${type}`],
  );
/** What the reconcile step does to the rules (here in the accountant's session: the test changed the admin's password). */
const repairRules = async () =>
  ensureEventRules(await openErpSession(accountantLogin(erp.url, tenant)), {
    tenant: tenant.name,
    eventsUrl: p.cfg.EVENTS_URL,
    ingestionKey: (await currentIngestionKey(new PgSecretStore(p.pool, p.cfg.SECRETS_KEY, 0))).key,
  });

beforeAll(async () => {
  p = await startWebhookPlatform({
    ERP_DATABASE_URL: databaseUrl(inject('databaseUrl'), 'postgres'),
    ERP_EVENTS_SWEEP_SETTLE: '1s',
  });
  admin = createPool(p.cfg.ERP_DATABASE_URL, 2);
  erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: p.cfg.DATABASE_URL,
    erpDatabaseUrl: p.cfg.ERP_DATABASE_URL,
    logger: createLogger({ level: 'silent' }),
  });
  // the worker reaches the ERP at ERP_URL: the stand-in of this file
  p.cfg.ERP_URL = erp.url;
  await p.stopWorker();
  await p.startWorker();
  // provisioned, then the reconcile step ensure-tier-modules: the tier's modules and the event rules
  const ingestionKey = (await currentIngestionKey(new PgSecretStore(p.pool, p.cfg.SECRETS_KEY, 0))).key;
  ({ tenant } = await provisionTenantWithEventRules(p.cfg, p.pool, admin, {
    tier: 'pro',
    version: '18',
    erpUrl: erp.url,
    ingestionKey,
  }));
  receiver = await startReceiver();
  ({ secret } = await p.endpointFor(tenant.workspace, receiver.url, ['invoice.posted', 'payment.received']));
  await setAccountantPassword(p.cfg, tenant);
  accountant = createErpClient(accountantLogin(erp.url, tenant));
  expect(
    await ensureErpEventSweepSchedule(p.temporal, {
      taskQueue: p.cfg.TEMPORAL_TASK_QUEUE,
      everyMs: 3_600_000,
      scheduleId,
    }),
  ).toBe('created');
  expect(
    await ensureErpEventSweepSchedule(p.temporal, {
      taskQueue: p.cfg.TEMPORAL_TASK_QUEUE,
      everyMs: 3_600_000,
      scheduleId,
    }),
  ).toBe('exists');
}, 120_000);

afterAll(async () => {
  await p?.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => {});
  await receiver?.close();
  await erp?.close();
  await admin?.end();
  await p?.close();
});

describe('the erp-events-sweep schedule', () => {
  it(
    "a tenant's first sweep records what its ERP already shows and publishes nothing: the past is not news",
    { timeout: 60_000 },
    async () => {
      const [{ n }] = (await queryTenantDb<{ n: string }>(
        p.cfg,
        tenant.database,
        `SELECT count(*) AS n FROM account_move WHERE move_type IN ('out_invoice', 'out_refund') AND state = 'posted'`,
      )) as [{ n: string }];
      expect(Number(n)).toBeGreaterThan(0);
      expect(await ours()).toBeUndefined();
      const result = await sweep();
      expect(result.baselines).toBeGreaterThanOrEqual(1);
      expect(await ours()).toMatchObject({ published: 0 });
      const seen = await p.pool.query<{ via: string; n: string }>(
        'SELECT via, count(*) AS n FROM erp_events_seen WHERE tenant = $1 GROUP BY via',
        [tenant.name],
      );
      expect(seen.rows).toEqual([{ via: 'baseline', n: expect.any(String) }]);
      expect(Number(seen.rows[0]!.n)).toBeGreaterThanOrEqual(Number(n));
      await new Promise((r) => setTimeout(r, 1000));
      expect(receiver.received).toHaveLength(0);
    },
  );

  it(
    'an invoice whose post the platform missed reaches the endpoint at the next sweep, once',
    { timeout: 60_000 },
    async () => {
      await breakRule('invoice.posted');
      const invoice = await draftInvoice();
      await accountant.executeKw('account.move', 'write', [[invoice], { state: 'posted' }]);
      await new Promise((r) => setTimeout(r, 1500));
      expect(receiver.received).toHaveLength(0); // Odoo's post went nowhere

      expect(await sweepOurs()).toBe(1);
      await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
      expect(delivered()[0]).toMatchObject({ type: 'invoice.posted', data: { id: invoice } });
      expect(await sweepOurs()).toBe(0); // swept once
      await repairRules();
    },
  );

  it('a change that was posted is not swept again: one delivery', { timeout: 60_000 }, async () => {
    const before = receiver.received.length;
    const invoice = await draftInvoice();
    await accountant.executeKw('account.move', 'write', [[invoice], { state: 'posted' }]);
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 1);
    expect(await sweepOurs()).toBe(0);
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.received).toHaveLength(before + 1);
    const seen = await p.pool.query('SELECT via FROM erp_events_seen WHERE tenant = $1 AND event_id = $2', [
      tenant.name,
      `account.move:${invoice}:posted`,
    ]);
    expect(seen.rows).toEqual([{ via: 'odoo' }]);
  });

  it(
    'an old invoice paid now, the payment post missed: only payment.received is swept, not the old invoice.posted',
    { timeout: 60_000 },
    async () => {
      const before = receiver.received.length;
      const [old] = await queryTenantDb<{ id: number }>(
        p.cfg,
        tenant.database,
        `SELECT id FROM account_move WHERE move_type = 'out_invoice' AND state = 'posted' AND payment_state = 'not_paid' ORDER BY id LIMIT 1`,
      );
      await breakRule('payment.received');
      await accountant.executeKw('account.move', 'write', [[old!.id], { payment_state: 'paid' }]);
      expect(await sweepOurs()).toBe(1);
      await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 1);
      expect(delivered().at(-1)).toMatchObject({ type: 'payment.received', data: { id: old!.id } });
      await repairRules();
    },
  );

  it(
    'a tenant whose ERP cannot be read is reported and read again next time; the others are swept',
    { timeout: 60_000 },
    async () => {
      // a tenant with a route whose ERP has no API user yet (its provisioning has not got that far)
      await p.pool.query(
        `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name) SELECT $1, workspace_id, 9, 'starter', '18', 'x@example.com', 'X' FROM tenants WHERE name = $2`,
        [`${tenant.name}-gone`, tenant.name],
      );
      await p.pool.query(
        `INSERT INTO tenant_routes (host, tenant, namespace, database) VALUES ('gone.erp.test', $1, 'plana-odoo-18', 'gone_db_missing')`,
        [`${tenant.name}-gone`],
      );
      const before = (await ours())!.sweptAt;
      const result = await sweep();
      expect(result.failed).toContainEqual({ tenant: `${tenant.name}-gone`, error: 'no API user yet' });
      expect(result.failed.map((f) => f.tenant)).not.toContain(tenant.name);
      expect((await ours())!.sweptAt.getTime()).toBeGreaterThan(before.getTime());
    },
  );
});
