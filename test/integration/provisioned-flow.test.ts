/**
 * The consequences of `client.provisioned` end to end on the real servers: events service over
 * HTTP → Redis stream → the `provisioning` consumer → account API POST /api/webhooks/provisioned
 * (workspace entry) and the welcome e-mail workflow → notifications service → SMTP sink.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { startApi } from '../../api/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import { startEvents } from '../../services/events/server.js';
import { startProvisionedConsumer, PROVISIONING_GROUP } from '../../services/events/consumers/provisioned.js';
import { createWorker } from '../../worker/index.js';
import { startSmtpSink, readMailbox, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { cloudEvent, publishEvent } from '../../domain/events/events.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import { freePort } from '../../scripts/local-servers.js';
import { CLIENT_PROVISIONED, type ClientProvisionedData } from '../../domain/tenants/provisioned-event.js';
import { tempDir, testConfig, workflowBundle } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';

let cfg: Config;
let pool: Pool;
let sink: SmtpSink;
let notifications: Awaited<ReturnType<typeof startNotifications>>;
let api: Awaited<ReturnType<typeof startApi>> | undefined;
let events: Awaited<ReturnType<typeof startEvents>>;
let consumer: Awaited<ReturnType<typeof startProvisionedConsumer>>;
let worker: Worker;
let workerConnection: NativeConnection;
let closeWorkerDeps: (() => Promise<void>) | undefined;
let workerRun: Promise<void>;
let temporal: Client;

const uniqueName = () => `p-${randomUUID().slice(0, 8)}`;

async function addTenant(name: string) {
  await pool.query(
    `INSERT INTO tenants (name, project_id, tier, erp_version, owner_email, owner_name)
     VALUES ($1, 42, 'pro', '18', $2, 'Olivia Owner')`,
    [name, `owner@${name}.test`],
  );
}

const provisionedData = (name: string): ClientProvisionedData => ({
  tenant: name,
  ownerEmail: `Owner@${name}.test`,
  ownerName: 'Olivia Owner',
  tier: 'pro',
  erpVersion: '18',
});

const publishProvisioned = (name: string, id = `${CLIENT_PROVISIONED}:${name}:1`) =>
  publishEvent(
    { eventsUrl: cfg.EVENTS_URL, apiKey: testKeys.events },
    cloudEvent({ id, source: '/plana/tests', type: CLIENT_PROVISIONED, subject: name, data: provisionedData(name) }),
  );

function callWebhook(body: unknown, headers: Record<string, string> = { 'x-api-key': testKeys.provisioning }) {
  return fetch(`${cfg.API_PUBLIC_URL}/api/webhooks/provisioned`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const mailsTo = (name: string) => readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`));

async function workspaceState(name: string) {
  const { rows } = await pool.query<{
    workspaces: number;
    linked: boolean;
    members: { email: string; role: string; has_password: boolean }[];
  }>(
    `SELECT (SELECT count(*)::int FROM workspaces WHERE slug = $1) AS workspaces,
            (SELECT t.workspace_id IS NOT NULL AND t.workspace_id = w.id FROM tenants t, workspaces w WHERE t.name = $1 AND w.slug = $1) AS linked,
            (SELECT coalesce(json_agg(json_build_object('email', u.email, 'role', m.role, 'has_password', u.password_hash IS NOT NULL)), '[]')
               FROM memberships m JOIN users u ON u.id = m.user_id JOIN workspaces w ON w.id = m.workspace_id
              WHERE w.slug = $1) AS members`,
    [name],
  );
  return rows[0]!;
}

/** The group has nothing pending and nothing undelivered: every published event was handled and acknowledged. */
async function streamDrained() {
  const res = await fetch(`${cfg.EVENTS_URL}/api/v1/events/info`, { headers: { 'x-api-key': testKeys.events } });
  const info = (await res.json()) as { groups: { name: string; pending: number; lag: number | null }[] };
  const group = info.groups.find((g) => g.name === PROVISIONING_GROUP);
  return group !== undefined && group.pending === 0 && group.lag === 0;
}

beforeAll(async () => {
  const eventsPort = await freePort();
  cfg = await testConfig({
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    EVENTS_STREAM: `events-provisioned-${randomUUID().slice(0, 8)}`,
    EVENTS_CLAIM_IDLE_MS: '500',
  });
  pool = createPool(cfg.DATABASE_URL, 2);
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  notifications = await startNotifications(cfg);
  api = await startApi(cfg);
  events = await startEvents(cfg);
  const created = await createWorker(cfg, { workflowBundle: workflowBundle() });
  ({ worker, connection: workerConnection } = created);
  closeWorkerDeps = (created as { closeDeps?: () => Promise<void> }).closeDeps;
  workerRun = worker.run();
  consumer = await startProvisionedConsumer(cfg, { consumer: 'test-consumer' });
  temporal = new Client({ connection: await Connection.connect({ address: cfg.TEMPORAL_ADDRESS }) });
});

afterAll(async () => {
  await consumer?.close();
  worker?.shutdown();
  await workerRun;
  await workerConnection?.close();
  await closeWorkerDeps?.();
  await temporal?.connection.close();
  await events?.close();
  await api?.close();
  await notifications?.close();
  await sink?.close();
  await pool?.end();
});

describe('POST /api/webhooks/provisioned', () => {
  it('creates the workspace entry the first time (201) and answers the same entry after (200)', async () => {
    const name = uniqueName();
    await addTenant(name);
    const body = { ...provisionedData(name), workspace: 'Olivia Trading' };

    const first = await callWebhook(body);
    expect(first.status).toBe(201);
    const entry = await first.json();
    expect(entry).toMatchObject({
      tenant: name,
      created: true,
      workspace: { slug: name, name: 'Olivia Trading' },
      owner: { email: `owner@${name}.test`, name: 'Olivia Owner', role: 'admin' },
    });

    const second = await callWebhook(body);
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ ...entry, created: false });

    expect(await workspaceState(name)).toEqual({
      workspaces: 1,
      linked: true,
      // the owner logs in with OIDC or sets a password later
      members: [{ email: `owner@${name}.test`, role: 'admin', has_password: false }],
    });
  });

  it('answers 404 for a tenant the platform does not know, and writes nothing', async () => {
    const name = uniqueName();
    const res = await callWebhook(provisionedData(name));
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      code: 'NOT_FOUND',
      detail: `Tenant "${name}" is not known to the platform.`,
    });
    expect((await workspaceState(name)).workspaces).toBe(0);
  });

  it('answers 400 with the problems of a bad body, and writes nothing', async () => {
    const name = uniqueName();
    await addTenant(name);
    const res = await callWebhook({ ...provisionedData(name), ownerEmail: 'not-an-email', tier: 'gold' });
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe('BAD_REQUEST');
    expect(problem.detail).toContain('ownerEmail');
    expect(problem.detail).toContain('tier');
    expect((await workspaceState(name)).workspaces).toBe(0);
  });

  it.each([
    ['no key', {}],
    ['a wrong key', { 'x-api-key': 'not-the-webhook-key-0000000000000' }],
    ['the ops key', { 'x-api-key': 'dev-ops-key-0000000000000000000000000000000000000000000000000000' }],
  ])('answers 401 with %s, and writes nothing', async (_label, headers: Record<string, string>) => {
    const name = uniqueName();
    await addTenant(name);
    const res = await callWebhook(provisionedData(name), headers);
    expect(res.status).toBe(401);
    expect((await res.json()).code).toBe('UNAUTHORIZED');
    expect((await workspaceState(name)).workspaces).toBe(0);
  });
});

describe('client.provisioned on the events stream', () => {
  it('published twice (and delivered again under another id): one workspace entry, one welcome e-mail', async () => {
    const name = uniqueName();
    await addTenant(name);

    const first = await publishProvisioned(name);
    const retried = await publishProvisioned(name);
    expect(retried).toEqual({ streamId: first.streamId, duplicate: true });
    // a second event for the same tenant (e.g. re-emitted after a spec change) is delivered too
    const again = await publishProvisioned(name, `${CLIENT_PROVISIONED}:${name}:2`);
    expect(again.duplicate).toBe(false);

    await expect.poll(() => mailsTo(name).length, { timeout: 30_000, interval: 200 }).toBe(1);
    await expect.poll(streamDrained, { timeout: 30_000, interval: 200 }).toBe(true);
    const welcome = temporal.workflow.getHandle(`welcome:${name}:1`);
    expect((await welcome.result()).duplicate).toBe(false);

    expect(mailsTo(name)).toHaveLength(1);
    expect(mailsTo(name)[0]!.subject).toContain(`"${name}"`);
    expect(await workspaceState(name)).toEqual({
      workspaces: 1,
      linked: true,
      members: [{ email: `owner@${name}.test`, role: 'admin', has_password: false }],
    });
    const { rows } = await pool.query('SELECT welcome_count FROM tenants WHERE name = $1', [name]);
    expect(rows[0].welcome_count).toBe(1);
    await expect(temporal.workflow.getHandle(`welcome:${name}:2`).describe()).rejects.toThrow(/not found/i);
  });

  it('keeps the event pending while the account API is down and completes it once the API is back', async () => {
    const name = uniqueName();
    await addTenant(name);
    await api!.close();
    api = undefined;

    await publishProvisioned(name);
    // delivered, not acknowledged: it stays pending in the group
    await expect
      .poll(
        async () => {
          const res = await fetch(`${cfg.EVENTS_URL}/api/v1/events/info`, {
            headers: { 'x-api-key': testKeys.events },
          });
          const info = (await res.json()) as { groups: { name: string; pending: number }[] };
          return info.groups.find((g) => g.name === PROVISIONING_GROUP)?.pending ?? 0;
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe(1);
    expect((await workspaceState(name)).workspaces).toBe(0);
    expect(mailsTo(name)).toHaveLength(0);

    api = await startApi(cfg);
    await expect.poll(() => mailsTo(name).length, { timeout: 30_000, interval: 200 }).toBe(1);
    await expect.poll(streamDrained, { timeout: 30_000, interval: 200 }).toBe(true);
    expect((await workspaceState(name)).workspaces).toBe(1);
    await temporal.workflow.getHandle(`welcome:${name}:1`).result();
    expect(mailsTo(name)).toHaveLength(1);
  });
});
