/**
 * Rotating `erp → event-ingestion` (switch proof `rules`) on the run's real Temporal,
 * PostgreSQL and Redis, the events service and the ERP stand-in: the tenant ERPs' automation rules
 * carry per-tenant tokens made from the pair's key; the rotation rewrites every tenant's rules to
 * the new key's tokens after the switch and before the old key dies, and rolls back when a
 * tenant's ERP cannot be updated.
 *
 * The pair is the events service's ingestion pair, with a target of this file's own
 * (`erp → event-ingestion-<hex>`, `startEvents(cfg, { ingestionPair })`), and the rotation reaches
 * this file's tenants only (`eventRules.tenants`): the platform database and its tenant routes are
 * shared with files running in parallel, whose own tenants post with the real pair's tokens.
 * Durations are shortened (quiet period 1.5 s, poll 250 ms); the events service writes usage
 * every 100 ms.
 *
 * With RECORD_HISTORIES=1 the successful rotation's history is written to
 * test/fixtures/histories/rotate-service-key-rules.json.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { Redis } from 'ioredis';
import { erpApiUserDeps, tenantAdminPassword } from '../../domain/erp/api-user.js';
import { createErpClient } from '../../domain/erp/client.js';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { hashOdooPassword } from '../../domain/erp/odoo-password.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import { rotationRecord, startRotation } from '../../domain/service-keys/rotation.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { ingestionToken } from '../../domain/erp-events/ingestion.js';
import { misuseRecord } from '../../domain/service-keys/misuse.js';
import { createPool, type Pool } from '../../lib/db.js';
import { startEvents } from '../../services/events/server.js';
import { startErpStandIn, type ErpStandIn } from '../../sandbox/erp/server.js';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { freePort } from '../../scripts/local-servers.js';
import type { Config } from '../../lib/config.js';
import type { RotationResult, RotationSettings } from '../../domain/service-keys/workflow-contract.js';
import { rotationStatusQuery } from '../../workflows/rotate-service-key.js';
import {
  connectTemporalClient,
  rotationActivityDeps,
  startRotationWorker,
  type RotationWorker,
  type TemporalClient,
} from '../support/rotation-worker.js';
import { erpTestConfig, provisionTenantWithEventRules, queryTenantDb, type TestTenant } from '../support/erp-tenant.js';

const PAIR = { caller: 'erp', target: `event-ingestion-${randomBytes(3).toString('hex')}` };
const INVENTORY = [
  { ...PAIR, target: PAIR.target as 'event-ingestion', live: true, what: 'this file', proof: 'rules' as const },
];
const SETTINGS: RotationSettings = {
  acceptWaitMs: 300,
  quietPeriodMs: 1500,
  pollIntervalMs: 250,
  deadlineMs: 15_000,
  rollbackWaitMs: 300,
  retryIntervals: { initialMs: 200, maximumMs: 1000 },
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cfg: Config;
let pool: Pool;
let admin: Pool;
let store: PgSecretStore;
let events: Awaited<ReturnType<typeof startEvents>>;
let erp: ErpStandIn;
let tenant: TestTenant;
let redis: Redis;
let temporal: TemporalClient;
let client: Client;
let rotationWorker: RotationWorker;
/** The ERP stand-in's warnings (a webhook post refused or timed out). */
const erpWarnings: string[] = [];
/** The tenants the rotation reaches (this file's own). */
const scope: TestTenant[] = [];

beforeAll(async () => {
  const eventsPort = await freePort();
  cfg = await erpTestConfig({
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    EVENTS_STREAM: `events-${PAIR.target}`,
    SERVICE_KEY_USAGE_FLUSH_MS: '100',
    ERP_DATABASE_URL: databaseUrl(inject('databaseUrl'), 'postgres'),
  });
  pool = createPool(cfg.DATABASE_URL, 4);
  admin = createPool(cfg.ERP_DATABASE_URL, 2);
  store = new PgSecretStore(pool, cfg.SECRETS_KEY, 0);
  // the pair's first key, as `db:migrate` makes it
  await ensureServiceKeys(pool, store, [PAIR as { caller: string; target: 'event-ingestion' }]);
  events = await startEvents(cfg, { ingestionPair: PAIR });
  // what the ERP logs about its webhook posts (Odoo logs a failed or timed-out post, and that is all)
  const lines = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        erpWarnings.push((JSON.parse(line) as { msg: string }).msg);
      done();
    },
  });
  erp = await startErpStandIn({
    host: '127.0.0.1',
    port: 0,
    platformDatabaseUrl: cfg.DATABASE_URL,
    erpDatabaseUrl: cfg.ERP_DATABASE_URL,
    logger: pino({ level: 'warn' }, lines),
  });
  cfg.ERP_URL = erp.url;
  // provisioned, then the reconcile step ensure-tier-modules: the rules, with the pair's current key's tokens
  ({ tenant } = await provisionTenantWithEventRules(cfg, pool, admin, {
    tier: 'pro',
    version: '18',
    erpUrl: erp.url,
    ingestionKey: (await store.current(PAIR.caller, PAIR.target)).key,
  }));
  scope.push(tenant);
  redis = new Redis(cfg.REDIS_URL);

  temporal = await connectTemporalClient();
  client = temporal.client;
  rotationWorker = await startRotationWorker(
    cfg.TEMPORAL_TASK_QUEUE,
    rotationActivityDeps(cfg, pool, store, {
      eventRules: {
        pool,
        erp: erpApiUserDeps(cfg, pool, erp.url),
        eventsUrl: cfg.EVENTS_URL,
        tenants: async () => scope.map((t) => ({ tenant: t.name, database: t.database })),
        timeoutMs: 10_000,
      },
    }),
  );
}, 120_000);

afterAll(async () => {
  await rotationWorker?.stop();
  await temporal?.close();
  redis?.disconnect();
  await events?.close();
  await erp?.close();
  await admin?.end();
  await pool?.end();
});

/** `n` new draft customer invoices in the tenant's ERP (copies of one of its own). */
async function draftInvoices(t: TestTenant, n: number): Promise<number[]> {
  const rows = await queryTenantDb<{ id: number }>(
    cfg,
    t.database,
    `INSERT INTO account_move
     SELECT (jsonb_populate_record(NULL::account_move, to_jsonb(m) || jsonb_build_object('id', nextval('account_move_id_seq'), 'name', m.name || '-R' || g, 'state', 'draft', 'payment_state', 'not_paid'))).*
       FROM account_move m, generate_series(1, $1::int) g
      WHERE m.id = (SELECT min(id) FROM account_move WHERE move_type = 'out_invoice')
     RETURNING id`,
    [n],
  );
  return rows.map((r) => r.id);
}

/**
 * An accountant posting the drafts one after another through XML-RPC (Odoo's rules post each to the
 * events service) until stopped; answers the ids it posted.
 */
function accountant(t: TestTenant, drafts: number[]) {
  // (the tenant's admin, whose password the platform set: the rotation needs it unchanged to reach the rules)
  const erpClient = createErpClient({
    baseUrl: erp.url,
    host: t.host,
    db: t.database,
    login: 'admin',
    password: tenantAdminPassword(cfg.SECRETS_KEY, t.database),
  });
  let stop = false;
  const posted: number[] = [];
  const running = (async () => {
    for (const id of drafts) {
      if (stop) break;
      await erpClient.executeKw('account.move', 'write', [[id], { state: 'posted' }]);
      posted.push(id);
      await sleep(80);
    }
  })();
  return {
    async stop() {
      stop = true;
      await running;
      return posted;
    },
  };
}

/** The invoice ids of the tenant's invoice.posted events on the stream. */
async function postedOnStream(t: TestTenant): Promise<Set<number>> {
  const stream = (await redis.xrange(cfg.EVENTS_STREAM, '-', '+')) as [string, string[]][];
  const ids = new Set<number>();
  for (const [, f] of stream) {
    const e = JSON.parse(f[f.indexOf('event') + 1]!) as { type: string; source: string; data: { id: number } };
    if (e.type === 'invoice.posted' && e.source === `/erp/${t.name}`) ids.add(e.data.id);
  }
  return ids;
}

/**
 * No post refused (the ERP logs every failed post with its status), and every posted invoice on the
 * stream, but for posts the ERP gave up on after Odoo's 1 s timeout (a loaded machine; the catch-up
 * sweep is what publishes those): those it logs too.
 */
async function expectAllArrived(t: TestTenant, posted: number[]) {
  expect(erpWarnings.filter((w) => !w.startsWith('Webhook call timed out'))).toEqual([]);
  const timedOut = erpWarnings.length;
  await expect
    .poll(
      async () => {
        const seen = await postedOnStream(t);
        return posted.filter((id) => !seen.has(id)).length;
      },
      { timeout: 10_000 },
    )
    .toBeLessThanOrEqual(timedOut);
  if (timedOut) console.log(`${timedOut} posts timed out at the ERP (1 s); none refused`);
  erpWarnings.length = 0;
}

/** The token in the URL of the tenant's invoice.posted rule. */
async function ruleToken(t: TestTenant): Promise<string> {
  const [row] = await queryTenantDb<{ url: string }>(
    cfg,
    t.database,
    `SELECT s.webhook_url AS url FROM base_automation a JOIN ir_act_server s ON s.base_automation_id = a.id WHERE a.name = 'Plana: invoice.posted'`,
  );
  return decodeURIComponent(new URL(row!.url).password);
}

/** What Odoo's rule posts, with a given token. */
const ingest = (t: TestTenant, token: string, id: number) =>
  fetch(new URL(`/api/v1/ingest/odoo/${t.name}/invoice.posted`, cfg.EVENTS_URL), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from(`${t.name}:${token}`).toString('base64')}`,
    },
    body: JSON.stringify({
      _model: 'account.move',
      _id: id,
      _action: 'manual',
      state: 'posted',
      move_type: 'out_invoice',
      amount_total: 10,
    }),
  });

const rotate = () =>
  startRotation(
    { pool, temporal: client, taskQueue: cfg.TEMPORAL_TASK_QUEUE, settings: SETTINGS, inventory: INVENTORY },
    PAIR,
    'manual',
  );

it("a tenant's invoices posted through XML-RPC reach the stream before, during and after the rotation with none refused; then the rules carry the new key's token, the old token gets 401, the new one 202", async () => {
  const old = await store.current(PAIR.caller, PAIR.target);
  expect(await ruleToken(tenant)).toBe(ingestionToken(old.key, tenant.name));
  const drafts = await draftInvoices(tenant, 200);
  const posting = accountant(tenant, drafts);
  await sleep(500);

  const started = await rotate();
  const handle = client.workflow.getHandle(started.workflowId);
  const result = (await handle.result()) as RotationResult;
  await sleep(500);
  const posted = await posting.stop();
  expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
  expect(await handle.query(rotationStatusQuery)).toMatchObject({
    proof: 'rules',
    rules: { keyId: result.newKeyId, tenants: 1, failed: [] },
  });

  // every post reached the stream: none was refused (Odoo posts once and never again)
  expect(posted.length).toBeGreaterThan(20);
  await expectAllArrived(tenant, posted);

  // the rules carry the new key's token; the old token is refused, the new one accepted
  const now = await store.current(PAIR.caller, PAIR.target);
  expect(now.keyId).toBe(result.newKeyId);
  expect(await ruleToken(tenant)).toBe(ingestionToken(now.key, tenant.name));
  const spare = (await draftInvoices(tenant, 2))!;
  await expect
    .poll(async () => (await ingest(tenant, ingestionToken(old.key, tenant.name), spare[0]!)).status, {
      timeout: 5_000,
    })
    .toBe(401);
  // a post with the revoked key's token is the revoked-key alert's case (misuse.ts), not just a wrong token
  await expect
    .poll(() => misuseRecord(pool, old.keyId), { timeout: 5_000 })
    .toMatchObject({ caller: 'erp', target: PAIR.target });
  expect((await ingest(tenant, ingestionToken(now.key, tenant.name), spare[1]!)).status).toBe(202);
  const states = Object.fromEntries((await listKeys(pool, PAIR)).map((k) => [k.keyId, k.state]));
  expect(states).toEqual({ [old.keyId]: 'revoked', [now.keyId]: 'current' });
  // the tenants' posts were recorded as uses of the key ids (the registry's usage records)
  const used = Object.fromEntries((await listKeys(pool, PAIR)).map((k) => [k.keyId, k.useCount]));
  expect(used[old.keyId]).toBeGreaterThan(0);
  expect(used[now.keyId]).toBeGreaterThan(0);

  const history = await handle.fetchHistory();
  const text = JSON.stringify(history);
  for (const k of [old.key, now.key]) {
    expect(text).not.toContain(k);
    expect(text).not.toContain(ingestionToken(k, tenant.name));
  }
  if (process.env.RECORD_HISTORIES) {
    writeFileSync(
      path.resolve(import.meta.dirname, '../fixtures/histories/rotate-service-key-rules.json'),
      JSON.stringify(history, null, 2) + '\n',
    );
  }
  console.log(`erp → event-ingestion rotation: ${posted.length} invoices posted, 0 refused`);
}, 60_000);

it('a reconcile that read the old key before the switch writes its token back after the rules were moved: the last pass moves the tenant again before the old key dies', async () => {
  const old = await store.current(PAIR.caller, PAIR.target);
  const started = await rotate();
  const handle = client.workflow.getHandle(started.workflowId);
  // the rules are moved, the rotation waits for the quiet period
  await expect
    .poll(async () => (await handle.query(rotationStatusQuery)).step, { timeout: 10_000, interval: 50 })
    .toBe('verify-switch');
  expect(await ruleToken(tenant)).not.toBe(ingestionToken(old.key, tenant.name));
  // now a reconcile with the old key (read before the switch) puts its token back
  await queryTenantDb(
    cfg,
    tenant.database,
    `UPDATE ir_act_server SET webhook_url = $1 WHERE base_automation_id = (SELECT id FROM base_automation WHERE name = 'Plana: invoice.posted')`,
    [
      `${cfg.EVENTS_URL}/api/v1/ingest/odoo/${tenant.name}/invoice.posted`.replace(
        '//',
        `//${tenant.name}:${encodeURIComponent(ingestionToken(old.key, tenant.name))}@`,
      ),
    ],
  );
  const result = (await handle.result()) as RotationResult;
  expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
  expect(await handle.query(rotationStatusQuery)).toMatchObject({
    rules: { keyId: result.newKeyId, tenants: 1, updated: 1, failed: [] },
  });
  const now = await store.current(PAIR.caller, PAIR.target);
  expect(await ruleToken(tenant)).toBe(ingestionToken(now.key, tenant.name));
}, 60_000);

it('a tenant whose ERP cannot be updated: rolled back (old key current again, rules back on the old token, new key revoked, alert recorded); the old token still works and nothing was refused', async () => {
  // a second tenant whose admins changed the admin's password: the platform cannot open its ERP
  const { tenant: locked } = await provisionTenantWithEventRules(cfg, pool, admin, {
    tier: 'pro',
    version: '18',
    erpUrl: erp.url,
    ingestionKey: (await store.current(PAIR.caller, PAIR.target)).key,
  });
  await queryTenantDb(cfg, locked.database, `UPDATE res_users SET password = $1 WHERE login = 'admin'`, [
    hashOdooPassword('changed-by-the-customer'),
  ]);
  scope.push(locked);
  try {
    const old = await store.current(PAIR.caller, PAIR.target);
    const drafts = await draftInvoices(tenant, 100);
    const posting = accountant(tenant, drafts);
    await sleep(300);

    const started = await rotate();
    const handle = client.workflow.getHandle(started.workflowId);
    const result = (await handle.result()) as RotationResult;
    await sleep(300);
    const posted = await posting.stop();

    expect(result).toMatchObject({ outcome: 'rolled-back', oldKeyId: old.keyId });
    expect(result.message).toContain(`1 of 2 tenants could not be updated (${locked.name}:`);
    expect(result.message).not.toContain(tenant.name + ':');
    expect((await store.current(PAIR.caller, PAIR.target)).keyId).toBe(old.keyId);
    const states = Object.fromEntries((await listKeys(pool, PAIR)).map((k) => [k.keyId, k.state]));
    expect(states[old.keyId]).toBe('current');
    expect(states[result.newKeyId]).toBe('revoked');
    expect(await rotationRecord(pool, started.workflowId)).toMatchObject({
      outcome: 'rolled-back',
      alert: `event service-key.rotation-failed:${started.workflowId}`,
    });

    // both tenants' rules are on the old key's token; it still works
    expect(await ruleToken(tenant)).toBe(ingestionToken(old.key, tenant.name));
    expect(await ruleToken(locked)).toBe(ingestionToken(old.key, locked.name));
    expect(posted.length).toBeGreaterThan(5);
    await expectAllArrived(tenant, posted);
    const [spare] = await draftInvoices(tenant, 1);
    expect((await ingest(tenant, ingestionToken(old.key, tenant.name), spare!)).status).toBe(202);
  } finally {
    scope.pop();
  }
}, 60_000);
