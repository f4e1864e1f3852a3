/**
 * The welcome e-mail end to end on the real servers: ops API → Temporal workflow → activity →
 * notifications service over HTTP → SMTP → the sink's mailbox.
 *
 * With RECORD_HISTORIES=1 the first e-mail's history is written to test/fixtures/histories.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { Worker, NativeConnection } from '@temporalio/worker';
import { startApi } from '../../api/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import { createWorker } from '../../worker/index.js';
import { startSmtpSink, readMailbox, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { tempDir, testConfig, workflowBundle } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';
import { linkIn } from '../support/portal.js';
import { recordHistory } from '../support/record-history.js';

let cfg: Config;
let pool: Pool;
let sink: SmtpSink;
let notifications: Awaited<ReturnType<typeof startNotifications>> | undefined;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Worker;
let workerConnection: NativeConnection;
let workerRun: Promise<void>;
let temporal: Client;

async function addTenant(name: string, email: string) {
  const ws = await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $2) RETURNING id', [
    name,
    `Workspace ${name}`,
  ]);
  await pool.query(
    `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name)
     VALUES ($1, $2, 42, 'starter', '18', $3, 'Owner')`,
    [name, ws.rows[0]!.id, email],
  );
}

const uniqueName = () => `t-${randomUUID().slice(0, 8)}`;

function requestWelcome(name: string, headers: Record<string, string> = { 'x-api-key': testKeys.operator }) {
  return api.app.inject({ method: 'POST', url: `/api/ops/tenants/${name}/welcome`, headers });
}

beforeAll(async () => {
  cfg = await testConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  notifications = await startNotifications(cfg);
  api = await startApi(cfg);
  ({ worker, connection: workerConnection } = await createWorker(cfg, { workflowBundle: workflowBundle() }));
  workerRun = worker.run();
  temporal = new Client({ connection: await Connection.connect({ address: cfg.TEMPORAL_ADDRESS }) });
});

afterAll(async () => {
  worker?.shutdown();
  await workerRun;
  await workerConnection?.close();
  await temporal?.connection.close();
  await api?.close();
  await notifications?.close();
  await sink?.close();
  await pool?.end();
});

describe('POST /api/ops/tenants/:name/welcome', () => {
  it('sends the welcome e-mail to the tenant owner through a visible workflow', async () => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);

    const res = await requestWelcome(name);
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body.workflowId).toBe(`welcome:${name}:1`);
    expect(body.temporalUiUrl).toContain(encodeURIComponent(`welcome:${name}:1`));

    const handle = temporal.workflow.getHandle(body.workflowId);
    const result = await handle.result();
    expect(result.duplicate).toBe(false);

    const mails = readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`));
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toContain(`"${name}"`);
    expect(mails[0]!.text).toContain(`your workspace "${name}" is ready`);

    // what an operator sees: the workflow, its search attributes and the named activity in the history
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.get(searchAttributes.tenant)).toBe(name);
    expect(description.typedSearchAttributes.get(searchAttributes.currentStep)).toBe('done');
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('requestWelcomeEmail');
    await recordHistory(handle, 'send-welcome-email');
  });

  it('numbers each resend: a second request is welcome:<tenant>:2 and sends a second e-mail with a new link that kills the old one', async () => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);
    // the owner as provisioning leaves them: a member without a password
    await pool.query(
      `WITH u AS (INSERT INTO users (email, name) VALUES ($1, 'Owner') RETURNING id)
       INSERT INTO memberships (user_id, workspace_id, role)
       SELECT u.id, t.workspace_id, 'admin' FROM u, tenants t WHERE t.name = $2`,
      [`owner@${name}.test`, name],
    );
    const first = (await requestWelcome(name)).json();
    await temporal.workflow.getHandle(first.workflowId).result();
    const second = (await requestWelcome(name)).json();
    expect(second.workflowId).toBe(`welcome:${name}:2`);
    await temporal.workflow.getHandle(second.workflowId).result();
    const mails = readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`));
    expect(mails).toHaveLength(2);
    const [oldLink, newLink] = mails.map((m) => linkIn(m, `${cfg.API_PUBLIC_URL}/w/${name}/activate#token=`).token);
    expect(newLink).not.toBe(oldLink);
    const activate = (token: string | undefined) =>
      api.app.inject({
        method: 'POST',
        url: '/api/portal/team/invitations/accept',
        payload: { token, password: 'correct horse battery' },
      });
    expect((await activate(oldLink)).statusCode).toBe(410);
    expect((await activate(newLink)).statusCode).toBe(200);
  });

  it('answers 404 with a problem body for a tenant the platform does not know', async () => {
    const res = await requestWelcome('no-such-tenant');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      detail: 'Tenant "no-such-tenant" is not known to the platform.',
    });
  });

  it.each(['Deprovisioned', 'Deprovisioning', 'Cancelled', 'Provisioning', 'Unavailable'])(
    'refuses a tenant whose TenantClient is %s with 409 naming its phase, and starts and sends nothing',
    async (phase) => {
      const name = uniqueName();
      await addTenant(name, `owner@${name}.test`);
      await pool.query(
        `INSERT INTO tenant_status (name, uid, spec, generation, phase) VALUES ($1, gen_random_uuid(), '{}', 1, $2)`,
        [name, phase],
      );
      const res = await requestWelcome(name);
      expect(res.statusCode).toBe(409);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toMatchObject({ status: 409, code: 'CONFLICT', phase });
      expect(res.json().detail).toContain(`Tenant "${name}" is ${phase}, not Ready`);
      const { rows } = await pool.query('SELECT welcome_count FROM tenants WHERE name = $1', [name]);
      expect(rows[0].welcome_count).toBe(0);
      await expect(temporal.workflow.getHandle(`welcome:${name}:1`).describe()).rejects.toThrow();
      expect(readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`))).toEqual([]);
    },
  );

  it('sends it for a tenant whose TenantClient is Ready', async () => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);
    await pool.query(
      `INSERT INTO tenant_status (name, uid, spec, generation, phase) VALUES ($1, gen_random_uuid(), '{}', 1, 'Ready')`,
      [name],
    );
    const res = await requestWelcome(name);
    expect(res.statusCode).toBe(202);
    await temporal.workflow.getHandle(res.json().workflowId).result();
    expect(readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`))).toHaveLength(1);
  });

  it.each([
    ['no key', {}],
    ['a wrong key', { 'x-api-key': 'not-the-ops-key-0000000000000000' }],
  ])('answers 401 with %s and starts nothing', async (_label, headers: Record<string, string>) => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);
    const res = await requestWelcome(name, headers);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('UNAUTHORIZED');
    const { rows } = await pool.query('SELECT welcome_count FROM tenants WHERE name = $1', [name]);
    expect(rows[0].welcome_count).toBe(0);
  });

  it('keeps retrying while the notifications service is down and sends exactly once when it is back', async () => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);
    await notifications!.close();
    notifications = undefined;

    const started = (await requestWelcome(name)).json();
    const handle = temporal.workflow.getHandle(started.workflowId);

    // wait until Temporal has retried the activity at least twice
    await expect
      .poll(async () => (await handle.describe()).raw.pendingActivities?.[0]?.attempt ?? 0, {
        timeout: 30_000,
        interval: 250,
      })
      .toBeGreaterThanOrEqual(3);
    const pending = (await handle.describe()).raw.pendingActivities?.[0];
    expect(pending?.lastFailure?.message).toContain('notifications service unreachable');
    expect(readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`))).toHaveLength(0);

    notifications = await startNotifications(cfg);
    await handle.result();
    expect(readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`))).toHaveLength(1);
  });
});

describe('npm run cli -- resend-welcome', () => {
  const cli = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'cli/index.ts', ...args], {
      env: { ...process.env, API_PUBLIC_URL: cfg.API_PUBLIC_URL, OPS_API_KEY: testKeys.operator },
    });

  it('starts the welcome e-mail and prints the workflow id and the Temporal UI link', async () => {
    const name = uniqueName();
    await addTenant(name, `owner@${name}.test`);
    const { stdout } = await cli('resend-welcome', name);
    expect(stdout).toContain(`workflow id: welcome:${name}:1`);
    expect(stdout).toContain(`/namespaces/default/workflows/${encodeURIComponent(`welcome:${name}:1`)}`);
    await temporal.workflow.getHandle(`welcome:${name}:1`).result();
    expect(readMailbox(sink.dir).filter((m) => m.to.includes(`owner@${name}.test`))).toHaveLength(1);
  });

  it('says clearly when the tenant is unknown and exits non-zero', async () => {
    const failure = await cli('resend-welcome', 'no-such-tenant').catch((err: { code: number; stderr: string }) => err);
    expect(failure).toMatchObject({
      code: 4,
      stderr: 'error: Tenant "no-such-tenant" is not known to the platform.\n',
    });
  });
});
