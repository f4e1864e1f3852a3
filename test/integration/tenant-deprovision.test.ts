/**
 * Deprovisioning (§3.2): cancel (or `kubectl delete` of the TenantClient) starts the soak timer
 * (3 s here); when it ends the route, the database, the filestore folder and the backup schedule go, the chat room
 * is archived, and the stored backups (in the object store) stay until the retention schedule finds
 * them expired and deletes them there.
 * Reactivating during the soak keeps everything.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe as group, expect, it } from 'vitest';
import { ScheduleNotFoundError } from '@temporalio/client';
import { ensureBackupRetentionSchedule } from '../../domain/tenants/backup-schedules.js';
import { backupObjectStore, type ObjectStore } from '../../lib/object-store.js';
import {
  applyTenant,
  deleteTenant,
  kubeCondition,
  waitForKubeTenant,
  condition,
  describe,
  health,
  isReady,
  ops,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

let p: TenantPlatform;
let store: ObjectStore;

beforeAll(async () => {
  p = await startTenantPlatform({ TENANT_SOAK_PERIOD: '3s' });
  store = backupObjectStore(p.cfg);
});

afterAll(async () => {
  store?.close();
  await p?.close();
});

const host = (name: string) => `${name}.${p.cfg.TENANT_DOMAIN}`;
const databaseExists = async (name: string) =>
  (await p.pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [host(name)])).rowCount === 1;
const scheduleExists = (name: string) =>
  p.temporal.schedule
    .getHandle(`backup:${name}`)
    .describe()
    .then(
      () => true,
      (err) => {
        if (err instanceof ScheduleNotFoundError) return false;
        throw err;
      },
    );
const folder = (name: string) => path.join(path.resolve(p.cfg.FILESTORE_ROOT), name);
const room = (name: string) => p.chatChannels().find((c) => c.name === `support-${name}-000042`);

async function provisionWithBackup(name: string) {
  expect(await applyTenant(p, name, { tier: 'pro' })).toBe('created');
  await waitForStatus(p, name, isReady);
  // one scheduled backup, run now through the tenant's own schedule
  await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
  await expect
    .poll(
      async () =>
        (await p.pool.query('SELECT count(*)::int AS n FROM tenant_backups WHERE tenant = $1', [name])).rows[0].n,
      { timeout: 30_000 },
    )
    .toBe(2);
}

const backups = async (name: string) =>
  (
    await p.pool.query<{ kind: string; path: string; size: number; days: number }>(
      `SELECT kind, path, size_bytes::int AS size, extract(day FROM expires_at - created_at)::int AS days
         FROM tenant_backups WHERE tenant = $1 ORDER BY id`,
      [name],
    )
  ).rows;

group('cancel → soak → deprovision', () => {
  it('removes the route, the database, the folder and the schedule, archives the chat room and keeps the backups', async () => {
    const name = uniqueTenant('bye');
    await provisionWithBackup(name);
    const scheduled = await backups(name);
    expect(scheduled.map((b) => b.kind)).toEqual(['database', 'filestore']);
    expect(scheduled.every((b) => b.days === 90)).toBe(true); // pro tier retention
    expect(scheduled[0]!.size).toBeGreaterThan(0);
    for (const b of scheduled) expect(await store.exists(b.path)).toBe(true);

    const cancelled = await ops(p, 'POST', `/api/ops/tenant-clients/${name}/cancel`);
    expect(cancelled.statusCode).toBe(202);
    expect(cancelled.json().status).toMatchObject({ phase: 'Cancelled' });
    expect(Date.parse(cancelled.json().status.deprovisionAt) - Date.parse(cancelled.json().status.cancelledAt)).toBe(
      3_000,
    );
    // during the soak the tenant still works
    expect(await health(p, host(name))).toMatchObject({ healthy: true });

    const final = await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned');
    expect(condition(final, 'Ready')).toMatchObject({ status: 'False', reason: 'Deleting' });
    expect(final.resources.database.state).toBe('Deleted');
    expect(final.resources.route.state).toBe('Deleted');
    expect(final.resources.filestore.state).toBe('Deleted');
    expect(final.resources.backupSchedule.state).toBe('Deleted');
    expect(final.resources.chatRoom.state).toBe('Archived');

    await expect.poll(async () => (await health(p, host(name))).httpStatus, { timeout: 10_000 }).toBe(404);
    expect(await databaseExists(name)).toBe(false);
    expect(existsSync(folder(name))).toBe(false);
    expect(await scheduleExists(name)).toBe(false);
    expect(room(name)?.delete_at).toBeGreaterThan(0);
    // the backups stay: the scheduled ones and the final one taken before the database was dropped
    const kept = await backups(name);
    expect(kept.length).toBe(4);
    for (const b of kept) expect(await store.exists(b.path)).toBe(true);

    // the final state stays readable, and the tenant cannot be touched again
    const described = await describe(p, name);
    expect(described.status.phase).toBe('Deprovisioned');
    expect(described.status.steps.map((s) => s.step)).toEqual(
      expect.arrayContaining([
        'cancel',
        'final-backup',
        'remove-route',
        'drop-database',
        'wipe-filestore',
        'delete-backup-schedule',
        'archive-chat-room',
      ]),
    );
    const list = (await ops(p, 'GET', '/api/ops/tenant-clients')).json().items;
    expect(list).toContainEqual(expect.objectContaining({ name, phase: 'Deprovisioned', ready: 'False' }));
    // a new spec for it is refused with a condition, and nothing starts again
    expect(await applyTenant(p, name, { tier: 'enterprise' })).toBe('configured');
    const refused = await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Synced')?.status === 'False');
    expect(kubeCondition(refused, 'Synced')?.message).toBe(
      `TenantClient "${name}" is deprovisioned; a name is used once (its status and stored backups keep it): apply the tenant under a new name.`,
    );
    expect((await ops(p, 'POST', `/api/ops/tenant-clients/${name}/reactivate`)).statusCode).toBe(409);
  });

  it('reactivate during the soak stops the timer and keeps everything', async () => {
    const name = uniqueTenant('stay');
    await provisionWithBackup(name);
    const cancelled = (await ops(p, 'POST', `/api/ops/tenant-clients/${name}/cancel`)).json();
    const reactivated = await ops(p, 'POST', `/api/ops/tenant-clients/${name}/reactivate`);
    expect(reactivated.statusCode).toBe(202);
    expect(reactivated.json().status).toMatchObject({ phase: 'Ready' });
    expect(reactivated.json().status.deprovisionAt).toBeUndefined();

    // let the cancelled soak period pass: nothing happens
    const deprovisionAt = Date.parse(cancelled.status.deprovisionAt);
    await expect.poll(() => Date.now() > deprovisionAt + 2_000, { timeout: 10_000, interval: 250 }).toBe(true);
    const status = await waitForStatus(p, name, isReady);
    expect(status.phase).toBe('Ready');
    expect(await health(p, host(name))).toMatchObject({ healthy: true });
    expect(await databaseExists(name)).toBe(true);
    expect(statSync(folder(name)).isDirectory()).toBe(true);
    expect(await scheduleExists(name)).toBe(true);
    expect(room(name)?.delete_at).toBe(0);
    expect(status.steps.map((s) => s.step)).toEqual(expect.arrayContaining(['cancel', 'reactivate']));
    expect(status.steps.map((s) => s.step)).not.toContain('drop-database');
  });

  it('kubectl delete cancels the tenant: the object stays Deleting through the soak, then it is deprovisioned and gone', async () => {
    const name = uniqueTenant('del');
    expect(await applyTenant(p, name)).toBe('created');
    await waitForStatus(p, name, isReady);

    await deleteTenant(p, name);
    const deleting = await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Ready')?.reason === 'Deleting');
    expect(deleting?.metadata.deletionTimestamp).toBeTruthy();
    const cancelled = await waitForStatus(p, name, (s) => s.phase === 'Cancelled');
    expect(Date.parse(cancelled.deprovisionAt!) - Date.parse(cancelled.cancelledAt!)).toBe(3_000);
    const again = await ops(p, 'POST', `/api/ops/tenant-clients/${name}/cancel`);
    expect(again.statusCode).toBe(409);
    expect(again.json().detail).toContain('is already cancelled');
    await expect(applyTenant(p, name, { ownerName: 'Someone Else' })).rejects.toThrow(
      `TenantClient "${name}" is being deleted (deprovisioning); apply it again once it is gone.`,
    );

    await waitForKubeTenant(p, name, (o) => o === undefined);
    expect((await waitForStatus(p, name, (s) => s.phase === 'Deprovisioned')).phase).toBe('Deprovisioned');
    expect(await databaseExists(name)).toBe(false);
    expect(await scheduleExists(name)).toBe(false);
  });
});

group('backup retention', () => {
  it('the retention schedule deletes backups whose tier retention has ended and keeps the others', async () => {
    const name = uniqueTenant('ret');
    await provisionWithBackup(name);
    const expired = await backups(name);
    // a second tenant's backups, still within retention
    const other = uniqueTenant('ret');
    await provisionWithBackup(other);

    // the retention of the first tenant's backups ends
    await p.pool.query(`UPDATE tenant_backups SET expires_at = now() - interval '1 minute' WHERE tenant = $1`, [name]);
    const scheduleId = `backup-retention-${name}`;
    expect(await ensureBackupRetentionSchedule(p.temporal, { taskQueue: p.cfg.TEMPORAL_TASK_QUEUE, scheduleId })).toBe(
      'created',
    );
    expect(await ensureBackupRetentionSchedule(p.temporal, { taskQueue: p.cfg.TEMPORAL_TASK_QUEUE, scheduleId })).toBe(
      'exists',
    );
    const schedule = p.temporal.schedule.getHandle(scheduleId);
    try {
      await schedule.trigger();
      await expect.poll(async () => (await backups(name)).length, { timeout: 30_000 }).toBe(0);
      for (const b of expired) expect(await store.exists(b.path)).toBe(false);
      const others = await backups(other);
      expect(others.length).toBe(2);
      for (const b of others) expect(await store.exists(b.path)).toBe(true);
    } finally {
      await schedule.delete();
    }
  });
});
