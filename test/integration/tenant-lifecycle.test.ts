/**
 * A TenantClient applied on the Kubernetes API (its controller running) becomes a working tenant, for real: the database
 * cloned from its template, the route the ERP stand-in answers on, the filestore folder, the
 * Temporal backup schedule, the chat room, one `client.provisioned` event, one welcome e-mail and
 * the portal's workspace entry. Also: the same resource applied twice at once, a changed spec, a
 * failing chat server, invalid resources, and a replay of the workflow's own history.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe as group, expect, it, vi } from 'vitest';
import pg from 'pg';
import { Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { buildCli, runCli } from '../../cli/index.js';
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { tempDir } from '../support/env.js';
import {
  applyTenant,
  deleteTenant,
  deprovisionNow,
  kubeCondition,
  waitForKubeTenant,
  condition,
  describe,
  health,
  isReady,
  mailsTo,
  ops,
  runErpDatabaseUrl,
  startTenantPlatform,
  tenantYaml,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';
import { testKeys } from '../support/service-keys.js';
import { kubeconfigPath } from '../support/kubernetes.js';
import { workflowSpanSinks } from '../../worker/tracing.js';

let p: TenantPlatform;

beforeAll(async () => {
  p = await startTenantPlatform();
});

afterAll(async () => {
  await p?.close();
});

async function databaseRows(database: string, sql: string): Promise<number> {
  const url = new URL(runErpDatabaseUrl());
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function databaseExists(database: string) {
  const { rowCount } = await p.pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  return rowCount === 1;
}

async function provisionedEvents(tenant: string) {
  const entries = await p.redis.xrange(p.cfg.EVENTS_STREAM, '-', '+');
  return entries
    .map(
      ([, fields]) =>
        JSON.parse(fields[fields.indexOf('event') + 1]!) as { type: string; subject?: string; id: string },
    )
    .filter((e) => e.type === 'client.provisioned' && e.subject === tenant);
}

group('apply a TenantClient', () => {
  it('turns it into a Ready tenant with every resource real, one event, one e-mail and the workspace entry', async () => {
    const name = uniqueTenant('acme');
    expect(await applyTenant(p, name, { tier: 'pro', projectId: 7 })).toBe('created');

    const status = await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined);
    expect(condition(status, 'Synced')).toMatchObject({
      status: 'True',
      reason: 'ReconcileSuccess',
      observedGeneration: 1,
    });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True', reason: 'Available', observedGeneration: 1 });
    for (const kind of ['database', 'apiUser', 'route', 'filestore', 'backupSchedule', 'chatRoom'] as const) {
      expect(status.resources[kind], kind).toMatchObject({ synced: 'True', state: 'Created' });
    }

    // the database: cloned from the pro/18 template, with its data
    const host = `${name}.${p.cfg.TENANT_DOMAIN}`;
    expect(await databaseExists(host)).toBe(true);
    const templateMoves = await databaseRows('erp_tpl_pro_18', 'SELECT count(*) AS n FROM account_move');
    expect(templateMoves).toBeGreaterThan(0);
    expect(await databaseRows(host, 'SELECT count(*) AS n FROM account_move')).toBe(templateMoves);
    // the dedicated API user, its password stored sealed
    expect(await databaseRows(host, `SELECT count(*) AS n FROM res_users WHERE login = 'api@${host}'`)).toBe(1);
    const creds = await p.pool.query('SELECT login, password_encrypted FROM tenant_erp_credentials WHERE tenant = $1', [
      name,
    ]);
    expect(creds.rows[0].login).toBe(`api@${host}`);
    expect(creds.rows[0].password_encrypted).toMatch(/^v1\./);

    // the route answers, in the namespace of its ERP version
    const route = await p.pool.query('SELECT namespace, database FROM tenant_routes WHERE tenant = $1', [name]);
    expect(route.rows).toEqual([{ namespace: 'plana-odoo-18', database: host }]);
    expect(await health(p, host)).toMatchObject({ healthy: true, httpStatus: 200 });

    // the filestore folder, directly under the root
    const folder = path.join(path.resolve(p.cfg.FILESTORE_ROOT), name);
    expect(statSync(folder).isDirectory()).toBe(true);
    expect(status.resources.filestore.externalName).toBe(folder);

    // the backup schedule, running backupTenant every BACKUP_INTERVAL
    const schedule = await p.temporal.schedule.getHandle(`backup:${name}`).describe();
    expect(schedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'backupTenant' });
    expect(schedule.action.type === 'startWorkflow' && schedule.action.args?.[0]).toEqual({
      tenant: name,
      tier: 'pro',
      database: host,
    });

    // the chat room
    const room = chatRoomName(name, 7);
    expect(room).toBe(`support-${name}-000007`);
    expect(p.chatChannels().filter((c) => c.name === room)).toHaveLength(1);

    // one client.provisioned, one welcome e-mail, the workspace entry
    await expect.poll(() => mailsTo(p, `owner@${name}.test`).length, { timeout: 30_000 }).toBe(1);
    expect(await provisionedEvents(name)).toHaveLength(1);
    expect((await provisionedEvents(name))[0]!.id).toBe(status.provisionedEventId);
    const ws = await p.pool.query(
      `SELECT w.slug FROM workspaces w JOIN tenants t ON t.workspace_id = w.id WHERE t.name = $1`,
      [name],
    );
    expect(ws.rows).toEqual([{ slug: name }]);

    // what an operator sees: the TenantClient's status on the Kubernetes API, and the ops API's
    // list and description with the steps and the Temporal UI link
    const obj = await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Ready')?.status === 'True');
    expect(obj?.status).toMatchObject({ phase: 'Ready', workflowId: `tenant:${name}`, observedGeneration: 1 });
    const list = await ops(p, 'GET', '/api/ops/tenant-clients');
    expect(list.json().items).toContainEqual(
      expect.objectContaining({ name, synced: 'True', ready: 'True', phase: 'Ready' }),
    );
    const described = await describe(p, name);
    expect(described.statusSource).toBe('workflow');
    expect(described.temporalUiUrl).toContain(encodeURIComponent(`tenant:${name}`));
    expect(described.status.steps.map((s) => s.step)).toEqual(
      expect.arrayContaining([
        'reserve-subdomain',
        'clone-database',
        'ensure-api-user',
        'create-route',
        'create-filestore',
        'create-backup-schedule',
        'ensure-chat-room',
        'probe-health',
        'publish-provisioned-event',
      ]),
    );
    // search attributes kept current
    const wf = await p.temporal.workflow.getHandle(tenantWorkflowId(name)).describe();
    expect(wf.typedSearchAttributes.get(searchAttributes.tenant)).toBe(name);
    expect(wf.typedSearchAttributes.get(searchAttributes.tier)).toBe('pro');
    expect(wf.typedSearchAttributes.get(searchAttributes.currentStep)).toBe('ready');
  });

  it('applying the same resource twice at once yields one workflow and one tenant; the same spec again is a no-op', async () => {
    const name = uniqueTenant('twice');
    const [a, b] = await Promise.all([applyTenant(p, name), applyTenant(p, name)]);
    expect([a, b].sort()).toEqual(['created', 'unchanged']);
    await waitForStatus(p, name, isReady);

    const runs = [];
    for await (const wf of p.temporal.workflow.list({ query: `WorkflowId = 'tenant:${name}'` })) runs.push(wf);
    expect(runs).toHaveLength(1);
    expect((await p.pool.query('SELECT count(*)::int AS n FROM tenant_status WHERE name = $1', [name])).rows[0].n).toBe(
      1,
    );
    expect((await p.pool.query('SELECT count(*)::int AS n FROM tenants WHERE name = $1', [name])).rows[0].n).toBe(1);

    expect(await applyTenant(p, name)).toBe('unchanged');
    expect((await p.kube.api.get(name)).metadata.generation).toBe(1);
  });

  it('a changed spec raises the generation and is reconciled (owner and tier); immutable fields are refused', async () => {
    const name = uniqueTenant('change');
    await applyTenant(p, name);
    await waitForStatus(p, name, isReady);

    expect(await applyTenant(p, name, { tier: 'enterprise', ownerName: 'Grace Owner' })).toBe('configured');
    expect((await p.kube.api.get(name)).metadata.generation).toBe(2);
    const status = await waitForStatus(p, name, (s) => isReady(s) && s.observedGeneration === 2);
    expect(condition(status, 'Synced')?.observedGeneration).toBe(2);
    const tenant = await p.pool.query('SELECT tier, owner_name FROM tenants WHERE name = $1', [name]);
    expect(tenant.rows[0]).toEqual({ tier: 'enterprise', owner_name: 'Grace Owner' });
    const schedule = await p.temporal.schedule.getHandle(`backup:${name}`).describe();
    expect(schedule.action.type === 'startWorkflow' && (schedule.action.args?.[0] as { tier: string }).tier).toBe(
      'enterprise',
    );
    // still one provisioned event: it is emitted once per tenant
    expect(await provisionedEvents(name)).toHaveLength(1);

    // the API server refuses a change of the ERP version, naming the field; the tenant stays as it was
    await expect(
      applyTenant(p, name, { tier: 'enterprise', ownerName: 'Grace Owner', erpVersion: '19' }),
    ).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringContaining(
        'spec.erpVersion: Invalid value: "string": cannot change from "18" to "19": an ERP upgrade is a migration, not an apply',
      ),
    });
    expect((await p.kube.api.get(name)).metadata.generation).toBe(2);
    expect(
      (await p.pool.query('SELECT generation FROM tenant_status WHERE name = $1', [name])).rows[0].generation,
    ).toBe(2);
  });

  it('with the chat server down the tenant turns Ready with the chat room failed; retry creates it', async () => {
    const name = uniqueTenant('nochat');
    await p.stopChat();
    try {
      await applyTenant(p, name, { projectId: 1234 });
      const status = await waitForStatus(p, name, (s) => isReady(s) && s.resources.chatRoom.state === 'Failed');
      expect(status.resources.chatRoom).toMatchObject({
        synced: 'False',
        state: 'Failed',
        externalName: `support-${name}-001234`,
      });
      expect(status.resources.chatRoom.message).toContain('chat server unreachable');
      expect(condition(status, 'Synced')?.message).toContain('chatRoom failed (non-fatal');
      expect(await health(p, `${name}.${p.cfg.TENANT_DOMAIN}`)).toMatchObject({ healthy: true });
    } finally {
      await p.startChat();
    }
    const retried = await ops(p, 'POST', `/api/ops/tenant-clients/${name}/retry-chat-room`);
    expect(retried.statusCode).toBe(202);
    const after = await waitForStatus(p, name, (s) => s.resources.chatRoom.state === 'Created');
    expect(after.resources.chatRoom).toMatchObject({ synced: 'True', externalName: `support-${name}-001234` });
    expect(p.chatChannels().filter((c) => c.name === `support-${name}-001234`)).toHaveLength(1);
    expect(condition(after, 'Ready')?.status).toBe('True');
  });

  it('a subdomain reserved by another TenantClient (another environment) blocks the tenant and creates nothing', async () => {
    const name = uniqueTenant('taken');
    await p.pool.query('INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, gen_random_uuid())', [
      name,
    ]);
    expect(await applyTenant(p, name)).toBe('created');
    const status = await waitForStatus(p, name, (s) => s.phase === 'Unavailable');
    expect(condition(status, 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ReconcileError',
      message: `subdomain "${name}" is reserved by another TenantClient`,
    });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'Unavailable' });
    expect(await databaseExists(`${name}.${p.cfg.TENANT_DOMAIN}`)).toBe(false);
    expect((await p.pool.query('SELECT count(*)::int AS n FROM tenants WHERE name = $1', [name])).rows[0].n).toBe(0);
    expect(
      (await p.pool.query('SELECT count(*)::int AS n FROM tenant_routes WHERE tenant = $1', [name])).rows[0].n,
    ).toBe(0);
    expect(existsSync(path.join(p.cfg.FILESTORE_ROOT, name))).toBe(false);
  });

  it('replays its own history deterministically', async () => {
    const name = uniqueTenant('replay');
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined);
    await deprovisionNow(p, name);
    await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned');
    const history = await p.temporal.workflow.getHandle(tenantWorkflowId(name)).fetchHistory();
    const { workflowBundle } = await import('../support/env.js');
    await Worker.runReplayHistory(
      { workflowBundle: workflowBundle(), sinks: workflowSpanSinks() },
      history,
      tenantWorkflowId(name),
    );
  });

  it('provisions in a few workflow tasks: the quick steps run as local activities inside them', async () => {
    const name = uniqueTenant('tasks');
    await applyTenant(p, name);
    await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined);
    const events = (await p.temporal.workflow.getHandle(tenantWorkflowId(name)).fetchHistory()).events ?? [];
    const EventType = proto.api.enums.v1.EventType;
    const scheduled = events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    for (const quick of [
      'reserveSubdomain',
      'createRoute',
      'createFilestore',
      'createBackupSchedule',
      'ensureChatRoom',
    ])
      expect(scheduled).not.toContain(quick);
    // the start, then one after each activity: the clone, the API user, the tier's modules, the
    // sign-in, the probe and the event (one per step, 12 or more, when every step was an activity)
    const tasks = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length;
    expect(tasks).toBeLessThanOrEqual(8);
  });
});

group('invalid TenantClients', () => {
  it.each([
    ['an unknown tier', { tier: 'gold' }, 'spec.tier: Unsupported value: "gold"'],
    ['a subdomain other than the name', { subdomain: 'other' }, 'must equal metadata.name'],
    ['a projectId that is not an integer', { projectId: 4.2 }, 'spec.projectId'],
    [
      'a bad owner e-mail',
      { ownerEmail: 'not-an-email' },
      'spec.ownerEmail: Invalid value: "string": must be an e-mail address such as owner@example.com',
    ],
    ['an unsupported ERP version', { erpVersion: '16' }, 'spec.erpVersion: Unsupported value: "16"'],
  ])('%s is refused by the API server with its message, and nothing is created', async (_label, spec, message) => {
    const name = uniqueTenant('bad');
    await expect(applyTenant(p, name, spec)).rejects.toThrow(message);
    await expect(p.kube.api.get(name)).rejects.toThrow(`TenantClient "${name}" does not exist.`);
    expect((await p.pool.query('SELECT count(*)::int AS n FROM tenant_status WHERE name = $1', [name])).rows[0].n).toBe(
      0,
    );
    await expect(p.temporal.workflow.getHandle(tenantWorkflowId(name)).describe()).rejects.toThrow();
    await expect(p.temporal.schedule.getHandle(`backup:${name}`).describe()).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
    expect(existsSync(path.join(p.cfg.FILESTORE_ROOT, name))).toBe(false);
  });

  it('lists every problem of a resource with several', async () => {
    const refused = applyTenant(p, uniqueTenant('multi'), { projectId: 'x', tier: 'gold' });
    await expect(refused).rejects.toThrow(/spec\.projectId[\s\S]*spec\.tier|spec\.tier[\s\S]*spec\.projectId/);
  });

  it('the support actions refuse callers without the ops key', async () => {
    const res = await p.api.app.inject({ method: 'POST', url: '/api/ops/tenant-clients/acme/cancel' });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('UNAUTHORIZED');
  });

  it('has no HTTP route that creates or deletes a TenantClient (the Kubernetes API does)', async () => {
    const create = await p.api.app.inject({
      method: 'POST',
      url: '/api/ops/tenant-clients',
      headers: { 'x-api-key': testKeys.operator },
      payload: {},
    });
    expect(create.statusCode).toBe(405);
    const remove = await ops(p, 'DELETE', '/api/ops/tenant-clients/acme');
    expect(remove.statusCode).toBe(405);
  });

  it('answers 404 for a TenantClient that does not exist', async () => {
    const res = await ops(p, 'GET', '/api/ops/tenant-clients/no-such-tenant');
    expect(res.statusCode).toBe(404);
    expect(res.json().detail).toBe('TenantClient "no-such-tenant" does not exist.');
  });
});

group('the operator CLI', () => {
  /** Runs `npm run cli -- <args>` in this process against the platform's account API over HTTP. */
  async function cli(...args: string[]): Promise<string> {
    process.env.PLANA_API_URL = p.cfg.API_PUBLIC_URL;
    process.env.OPS_API_KEY = testKeys.operator;
    process.env.KUBECONFIG = kubeconfigPath();
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
    try {
      await buildCli().parseAsync(['node', 'plana', ...args]);
    } finally {
      log.mockRestore();
    }
    return lines.join('\n');
  }

  it('apply -f, get tenants, describe tenant (on the Kubernetes API), retry chat-room, cancel, reactivate, delete', async () => {
    const name = uniqueTenant('cli');
    const file = path.join(tempDir('cli'), 'tenant.yaml');
    await p.kube.controller();
    writeFileSync(file, tenantYaml(name, { tier: 'enterprise' }, p.kube.label));

    expect(await cli('apply', '-f', file)).toContain(`tenantclient.plana.dev/${name} created (generation 1)`);
    // what get and describe read: the TenantClient's status, which follows the workflow's
    await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Ready')?.status === 'True');
    expect(await cli('apply', '-f', file)).toContain(`tenantclient.plana.dev/${name} unchanged (generation 1)`);

    const table = await cli('get', 'tenants');
    expect(table.split('\n')[0]).toMatch(/^NAME\s+SYNCED\s+READY\s+PHASE\s+AGE\s*$/);
    expect(table).toMatch(new RegExp(`^${name}\\s+True\\s+True\\s+Ready\\s+\\d+s\\s*$`, 'm'));
    expect((await cli('get', 'tenants', name)).split('\n')).toHaveLength(2);
    const json = JSON.parse(await cli('get', 'tenants', name, '-o', 'json'));
    expect(json).toMatchObject({
      apiVersion: 'plana.dev/v1alpha1',
      kind: 'TenantClient',
      metadata: { name },
      spec: { tier: 'enterprise' },
    });

    const page = await cli('describe', 'tenant', name);
    expect(page).toMatch(/Conditions:[\s\S]*Synced\s+True\s+ReconcileSuccess/);
    expect(page).toMatch(/Ready\s+True\s+Available/);
    expect(page).toMatch(/Resources:[\s\S]*database\s+True\s+Created/);
    expect(page).toMatch(/Events:[\s\S]*Normal\s+Applied\s+generation 1 created/);
    expect(page).toContain(
      `Temporal UI:          ${p.cfg.TEMPORAL_UI_URL}/namespaces/default/workflows/${encodeURIComponent(`tenant:${name}`)}`,
    );
    expect(JSON.parse(await cli('describe', 'tenant', name, '-o', 'json')).status.phase).toBe('Ready');

    const retried = await cli('retry', 'chat-room', name);
    expect(retried).toContain('retry requested');
    // a support action names the workflow it went to, with its Temporal UI link
    expect(retried).toContain(
      `workflow tenant:${name}: ${p.cfg.TEMPORAL_UI_URL}/namespaces/default/workflows/${encodeURIComponent(`tenant:${name}`)}`,
    );
    expect(await cli('cancel', 'tenant', name)).toContain(`tenantclient.plana.dev/${name} cancelled: deprovisioned at`);
    expect(await cli('reactivate', 'tenant', name)).toContain(`tenantclient.plana.dev/${name} reactivated`);
    expect(await cli('delete', 'tenant', name)).toContain(
      `tenantclient.plana.dev/${name} deleted: Ready=False (Deleting) until deprovisioned after the soak period`,
    );
    await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Ready')?.reason === 'Deleting');
    await expect(cli('get', 'tenants', 'no-such-tenant')).rejects.toThrow(
      'TenantClient "no-such-tenant" does not exist.',
    );

    writeFileSync(file, tenantYaml(name, { tier: 'diamond' }, p.kube.label));
    await expect(cli('apply', '-f', file)).rejects.toThrow(
      `${file} is not a valid TenantClient:\n  spec.tier: must be one of starter, pro, enterprise`,
    );
  });

  it('reactivate after kubectl delete is refused (409, CLI exit 1) saying why, and the tenant stays cancelled', async () => {
    const name = uniqueTenant('delre');
    expect(await applyTenant(p, name)).toBe('created');
    await waitForStatus(p, name, isReady);
    await deleteTenant(p, name);
    // the controller tells the workflow its TenantClient is deleted: cancelled for good
    await waitForStatus(p, name, (s) => s.phase === 'Cancelled' && s.tenantClientDeletedAt !== undefined);

    const refused = await ops(p, 'POST', `/api/ops/tenant-clients/${name}/reactivate`);
    expect(refused.statusCode).toBe(409);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json().detail).toMatch(
      new RegExp(
        `^Cannot reactivate TenantClient "${name}": its TenantClient was deleted \\(kubectl delete at [^)]+\\), and a deletion cannot be taken back`,
      ),
    );
    expect(refused.json().detail).toContain(`npm run cli -- backup ${name}`);

    process.env.PLANA_API_URL = p.cfg.API_PUBLIC_URL;
    process.env.OPS_API_KEY = testKeys.operator;
    const said: string[] = [];
    const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void said.push(a.join(' ')));
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void said.push(a.join(' ')));
    let code: number;
    try {
      code = await runCli(['reactivate', 'tenant', name]);
    } finally {
      error.mockRestore();
      log.mockRestore();
    }
    expect(code).toBe(1);
    expect(said.join('\n')).toMatch(
      new RegExp(`^error: Cannot reactivate TenantClient "${name}": its TenantClient was deleted`),
    );
    expect(said.join('\n')).not.toContain('reactivated');

    // refused by the workflow itself: still cancelled, no reactivate step, Deleting
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const status = (await describe(p, name)).status;
    expect(status.phase).toBe('Cancelled');
    expect(status.steps.map((s) => s.step)).not.toContain('reactivate');
    expect(kubeCondition(await p.kube.api.get(name), 'Ready')?.reason).toBe('Deleting');
  });
});
