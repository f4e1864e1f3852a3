/**
 * Restore in place (`restore:<tenant>-p<hex>`, a child of the tenant's lifecycle workflow): a backup
 * restored into the tenant itself, only for a cancelled tenant or with its name as confirmation,
 * after a safety backup of what it replaces.
 * Failure paths: a corrupt object or the object store down leave the tenant serving its own data
 * (nothing half-restored is switched in), and two restores of one tenant at once are refused.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { routeOfHost } from '../../domain/tenants/http-routes.js';
import * as backupSupport from '../support/backups.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { isReady, ops, uniqueTenant, waitForStatus, type TenantPlatform } from '../support/tenant-platform.js';
import { recordHistory } from '../support/record-history.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { testKeys } from '../support/service-keys.js';

let p: TenantPlatform;
let relay: TcpProxy;

beforeAll(async () => {
  ({ p, relay } = await backupSupport.startBackupPlatform());
});

afterAll(async () => {
  await p?.close();
  await relay?.close();
});

const hostOf = (name: string) => backupSupport.hostOf(p, name);
const attachment = (name: string) => backupSupport.attachmentPath(p, name);
const partnerNames = (name: string) =>
  backupSupport.inTenantDb(p, hostOf(name), async (db) =>
    (await db.query<{ name: string }>('SELECT name FROM res_partner')).rows.map((r) => r.name),
  );

/** A Ready tenant backed up with partner "Before the backup" and its attachment, then changed. */
async function changedSinceBackup(prefix: string): Promise<{ name: string; backupId: string }> {
  const name = uniqueTenant(prefix);
  await backupSupport.readyTenantWithAttachment(p, name, { attachment: 'invoice as it was' });
  await backupSupport.inTenantDb(p, hostOf(name), (db) =>
    db.query(`INSERT INTO res_partner (name) VALUES ('Before the backup')`),
  );
  const backupId = await backupSupport.backUpNow(p, name);
  await backupSupport.inTenantDb(p, hostOf(name), (db) =>
    db.query(`INSERT INTO res_partner (name) VALUES ('After the backup')`),
  );
  writeFileSync(attachment(name), 'invoice changed since');
  return { name, backupId };
}

const restoreInPlace = (name: string, body: Record<string, unknown> = {}) =>
  p.api.app.inject({
    method: 'POST',
    url: `/api/ops/tenants/${name}/restore-in-place`,
    headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
    payload: body,
  });
const restoreState = async (name: string) => (await ops(p, 'GET', `/api/ops/restores/${name}`)).json();
const waitForRestore = (name: string, state: string, timeout = 120_000) =>
  expect.poll(async () => (await restoreState(name)).state, { timeout, interval: 250 }).toBe(state);
/** Databases, folders and reservations of the restore's staging and set-aside names. */
const leftovers = async (name: string) => {
  const like = [`${name}-p%`, `${name}-o%`];
  const dbs = await p.pool.query('SELECT datname FROM pg_database WHERE datname LIKE ANY($1)', [like]);
  const reserved = await p.pool.query('SELECT subdomain FROM subdomain_reservations WHERE subdomain LIKE ANY($1)', [
    like,
  ]);
  return [...dbs.rows.map((r) => r.datname), ...reserved.rows.map((r) => r.subdomain)];
};

it('refuses to replace a live tenant without its name as confirmation, in the caller’s terms, recording nothing', async () => {
  const { name } = await changedSinceBackup('ipno');
  const unconfirmed = await restoreInPlace(name);
  expect(unconfirmed.statusCode).toBe(409);
  expect(unconfirmed.headers['content-type']).toContain('application/problem+json');
  expect(unconfirmed.json().detail).toBe(
    `tenant "${name}" is Ready: restoring it in place replaces its data; cancel it first, or confirm it: body.confirm "${name}"`,
  );
  const wrong = await restoreInPlace(name, { confirm: 'another-tenant' });
  expect(wrong.statusCode).toBe(400);
  expect(wrong.json().errors).toEqual([
    { field: 'body.confirm', message: `must be the tenant's name ("${name}"), not "another-tenant"` },
  ]);
  expect((await ops(p, 'GET', `/api/ops/tenants/${name}/restores`)).json().items).toEqual([]);
  expect(await partnerNames(name)).toContain('After the backup');
});

it('with confirmation, restores the backup into the tenant after a safety backup, which undoes it', async () => {
  const { name, backupId } = await changedSinceBackup('ip');
  const res = await restoreInPlace(name, { confirm: name });
  expect(res.statusCode).toBe(202);
  const { restore: started, workflowId } = res.json();
  expect(started).toMatchObject({ mode: 'in-place', sourceTenant: name, backupId, host: hostOf(name) });
  expect(workflowId).toBe(`restore:${started.name}`);

  await waitForRestore(started.name, 'ready');
  // the tenant itself serves the backup's data, at its own host
  expect(await partnerNames(name)).toContain('Before the backup');
  expect(await partnerNames(name)).not.toContain('After the backup');
  expect(readFileSync(attachment(name), 'utf8')).toBe('invoice as it was');
  expect(await routeOfHost(p.pool, hostOf(name))).toMatchObject({ tenant: name, database: hostOf(name) });
  expect(await leftovers(name)).toEqual([]);
  expect(existsSync(path.resolve(p.cfg.FILESTORE_ROOT, started.name))).toBe(false);
  // the tenant's lifecycle workflow ran it as its child, recorded its outcome and is Ready again
  const lifecycle = await waitForStatus(
    p,
    name,
    (s) =>
      isReady(s) &&
      s.steps.some((st) => st.step === 'restore-in-place' && st.message.startsWith(`backup ${backupId} restored`)),
  );
  expect(lifecycle.phase).toBe('Ready');
  await recordHistory(p.temporal.workflow.getHandle(tenantWorkflowId(name)), 'tenant-lifecycle-restore-in-place');

  // what it replaced was backed up first: restoring that safety backup in place brings it back
  const { safetyBackupId } = await restoreState(started.name);
  expect(safetyBackupId).toMatch(new RegExp(`^${name}/`));
  expect(safetyBackupId).not.toBe(backupId);
  const undo = await restoreInPlace(name, { confirm: name, backupId: safetyBackupId });
  expect(undo.statusCode).toBe(202);
  await waitForRestore(undo.json().restore.name, 'ready');
  expect(await partnerNames(name)).toContain('After the backup');
  expect(readFileSync(attachment(name), 'utf8')).toBe('invoice changed since');
}, 240_000);

it('a corrupt backup fails the restore before the switch: the tenant keeps its own data', async () => {
  const { name, backupId } = await changedSinceBackup('ipbad');
  const { rows } = await p.pool.query<{ path: string }>(
    `SELECT path FROM tenant_backups WHERE backup_id = $1 AND kind = 'database'`,
    [backupId],
  );
  await backupSupport.overwriteObject(rows[0]!.path, 'bit rot');

  const copy = (await restoreInPlace(name, { confirm: name, backupId })).json().restore.name as string;
  await waitForRestore(copy, 'failed');
  expect((await restoreState(copy)).error).toContain(`object ${rows[0]!.path} is corrupt`);
  expect(await partnerNames(name)).toContain('After the backup');
  expect(readFileSync(attachment(name), 'utf8')).toBe('invoice changed since');
  expect(await routeOfHost(p.pool, hostOf(name))).toMatchObject({ tenant: name, database: hostOf(name) });
  expect(await leftovers(name)).toEqual([]);
}, 240_000);

it('a cancelled tenant needs no confirmation; with the object store down the restore waits, the tenant untouched, a second restore refused', async () => {
  const { name } = await changedSinceBackup('ipgone');
  expect((await ops(p, 'POST', `/api/ops/tenant-clients/${name}/cancel`)).statusCode).toBe(202);
  await waitForStatus(p, name, (s) => s.phase === 'Cancelled', 60_000);

  await relay.down();
  let restore = '';
  try {
    const res = await restoreInPlace(name);
    expect(res.statusCode).toBe(202);
    restore = res.json().restore.name;
    await expect
      .poll(
        async () =>
          (await p.temporal.workflow.getHandle(`restore:${restore}`).describe()).raw.pendingActivities?.[0]?.attempt ??
          0,
        { timeout: 60_000, interval: 500 },
      )
      .toBeGreaterThanOrEqual(2);
    expect((await restoreState(restore)).state).toBe('restoring');
    expect(await partnerNames(name)).toContain('After the backup');

    // one restore of a tenant at a time, whichever kind
    for (const second of [
      await restoreInPlace(name),
      await p.api.app.inject({
        method: 'POST',
        url: `/api/ops/tenants/${name}/restores`,
        headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
        payload: {},
      }),
    ]) {
      expect(second.statusCode).toBe(409);
      expect(second.json().detail).toBe(
        `a restore of tenant "${name}" is already running (${restore}); wait for it to finish`,
      );
    }
  } finally {
    await relay.up();
  }
  await waitForRestore(restore, 'ready', 180_000);
  expect(await partnerNames(name)).not.toContain('After the backup');
  expect(readFileSync(attachment(name), 'utf8')).toBe('invoice as it was');
}, 300_000);
