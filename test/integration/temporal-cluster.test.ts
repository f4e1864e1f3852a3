/**
 * The platform on the production-shaped Temporal (scripts/local-temporal-cluster.ts): the Temporal
 * server built from Go modules, PostgreSQL persistence and SQL visibility on the run's PostgreSQL
 * (databases of this file's own), four history shards. Started once for this file: the worker
 * runs there, a TenantClient is provisioned to Ready, its backup schedule runs, and the workflows
 * are found by the platform's search attributes in SQL visibility.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { freePort } from '../../scripts/local-servers.js';
import {
  startTemporalCluster,
  temporalPostgresFrom,
  type TemporalCluster,
} from '../../scripts/local-temporal-cluster.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { tempDir } from '../support/env.js';
import { runScheduleNow } from '../support/schedules.js';
import {
  applyTenant,
  isReady,
  mailsTo,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let cluster: TemporalCluster;
let p: TenantPlatform;

beforeAll(async () => {
  const suffix = randomUUID().slice(0, 8);
  cluster = await startTemporalCluster({
    dir: tempDir('temporal-cluster'),
    port: await freePort(),
    postgres: temporalPostgresFrom(inject('databaseUrl')),
    databases: { main: `temporal_${suffix}`, visibility: `temporal_visibility_${suffix}` },
    historyShards: 4,
  });
  p = await startTenantPlatform({ TEMPORAL_ADDRESS: cluster.address });
  // the first use on a machine builds the Temporal server (scripts/build-temporal-server.sh, 10-20 min)
}, 45 * 60_000);

afterAll(async () => {
  await p?.close();
  await cluster?.stop();
});

it('is the Temporal server with PostgreSQL persistence, SQL visibility and the platform search attributes', async () => {
  const info = await p.temporal.connection.workflowService.getClusterInfo({});
  expect(info.serverVersion).toBe('1.32.1');
  expect(info.historyShardCount).toBe(4);
  expect(info.persistenceStore).toBe('postgres12');
  expect(info.visibilityStore).toBe('postgres12');
  const registered = await p.temporal.connection.operatorService.listSearchAttributes({ namespace: 'default' });
  expect(Object.keys(registered.customAttributes).sort()).toEqual(
    Object.values(searchAttributes)
      .map((k) => k.name)
      .sort(),
  );
});

it('provisions a tenant to Ready through the worker on it, runs its backup schedule and finds both by search attribute', async () => {
  const name = uniqueTenant('cl');
  expect(await applyTenant(p, name, { tier: 'pro' })).toBe('created');
  const status = await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined);
  expect(status.resources.backupSchedule).toMatchObject({ synced: 'True', state: 'Created' });
  await expect.poll(() => mailsTo(p, `owner@${name}.test`).length, { timeout: 30_000 }).toBe(1);

  // the schedule the provisioning created fires on this server and its run completes
  await runScheduleNow(p.temporal, `backup:${name}`);
  const { rows } = await p.pool.query<{ kind: string }>(
    'SELECT kind FROM tenant_backups WHERE tenant = $1 ORDER BY kind',
    [name],
  );
  expect(rows.map((r) => r.kind)).toEqual(['database', 'filestore']);

  // SQL visibility answers the platform's queries by its search attributes: the tenant's lifecycle,
  // its welcome e-mail and its backup
  await expect
    .poll(
      async () => {
        const types: string[] = [];
        for await (const wf of p.temporal.workflow.list({ query: `Tenant = '${name}'` })) types.push(wf.type);
        return types.sort();
      },
      { timeout: 15_000, interval: 250 },
    )
    .toEqual(['backupTenant', 'sendWelcomeEmail', 'tenantLifecycle']);
}, 180_000);
