/**
 * Backups in the object store (§3.2, §8): a tenant's scheduled backup stores its `pg_dump` and its
 * filestore archive in the S3 store (the run's SeaweedFS, reached through a relay the test can cut),
 * each with its SHA-256, recorded together once both are stored, kept for the tier's retention.
 * With the store down the backup retries and records nothing until the store is back; an object
 * whose content changed is refused on read.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseConfig } from '../../lib/config.js';
import { backupObjectStore, ChecksumMismatchError, type ObjectStore } from '../../lib/object-store.js';
import { backupRows, overwriteObject, readyTenantWithAttachment, startBackupPlatform } from '../support/backups.js';
import { tempDir } from '../support/env.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { uniqueTenant, type TenantPlatform } from '../support/tenant-platform.js';

let p: TenantPlatform;
let relay: TcpProxy;
/** The run's store, reached directly (not through the relay). */
let store: ObjectStore;

beforeAll(async () => {
  ({ p, relay } = await startBackupPlatform());
  store = backupObjectStore(parseConfig({ NODE_ENV: 'test', ...inject('objectStoreEnv') }));
});

afterAll(async () => {
  store?.close();
  await p?.close();
  await relay?.close();
});

const backups = (name: string) => backupRows(p, name);
const tenantWithAttachment = (name: string, tier = 'starter') =>
  readyTenantWithAttachment(p, name, { tier, attachment: 'an attachment of the tenant' });

/** The backup workflow the tenant's schedule started (its last one). */
async function runningBackup(name: string) {
  for await (const wf of p.temporal.workflow.list({ query: `WorkflowType = 'backupTenant' AND Tenant = '${name}'` }))
    return p.temporal.workflow.getHandle(wf.workflowId, wf.runId);
  return null;
}

it('a scheduled backup stores the dump and the filestore archive in the object store, checksummed, for the tier retention', async () => {
  const name = uniqueTenant('bk');
  await tenantWithAttachment(name, 'pro');
  await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
  await expect.poll(async () => (await backups(name)).length, { timeout: 60_000 }).toBe(2);

  const rows = await backups(name);
  expect(rows.map((r) => r.kind)).toEqual(['database', 'filestore']);
  const backupId = rows[0]!.backup_id;
  expect(backupId).toMatch(new RegExp(`^${name}/\\d{8}T\\d{6}\\d*Z$`));
  for (const row of rows) {
    expect(row).toMatchObject({ storage: 'object-store', backup_id: backupId, days: 90 });
    expect(row.path).toBe(`pro/${backupId}/${row.kind === 'database' ? 'database.dump' : 'filestore.tar.gz'}`);
  }

  // what the store holds is what was recorded: its content hashes to the recorded digest
  const dir = tempDir('restored');
  const dump = path.join(dir, 'database.dump');
  const archive = path.join(dir, 'filestore.tar.gz');
  expect(await store.getFile(rows[0]!.path, dump, rows[0]!.sha256)).toMatchObject({
    sizeBytes: Number(rows[0]!.size_bytes),
  });
  await store.getFile(rows[1]!.path, archive, rows[1]!.sha256);
  expect(readFileSync(dump).subarray(0, 5).toString()).toBe('PGDMP');
  expect(execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' })).toContain(`${name}/ab/invoice-0001.pdf`);
  // nothing is left in the worker's scratch folder
  expect(readdirSync(path.join(path.resolve(p.cfg.BACKUP_ROOT), name))).toEqual([]);
});

it('with the object store down, the backup retries and records nothing until the store is back', async () => {
  const name = uniqueTenant('bkdown');
  await tenantWithAttachment(name);
  await relay.down();
  try {
    await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
    // the backup activity fails on the store and is retried
    let run: Awaited<ReturnType<typeof runningBackup>> = null;
    await expect
      .poll(
        async () => {
          run ??= await runningBackup(name);
          const pending = run ? (await run.describe()).raw.pendingActivities?.[0] : undefined;
          return { attempt: pending?.attempt ?? 0, failure: pending?.lastFailure?.message ?? '' };
        },
        { timeout: 60_000, interval: 500 },
      )
      .toMatchObject({ attempt: expect.toSatisfy((n: number) => n >= 2), failure: expect.stringMatching(/\S/) });
    expect(await backups(name)).toEqual([]);
  } finally {
    await relay.up();
  }
  // the store back: the next attempt stores and records the whole backup
  await expect.poll(async () => (await backups(name)).length, { timeout: 90_000 }).toBe(2);
  const rows = await backups(name);
  for (const row of rows) expect(await store.exists(row.path)).toBe(true);
  expect(new Set(rows.map((r) => r.backup_id)).size).toBe(1);
}, 180_000);

it('an object whose content changed in the store is refused on read (checksum mismatch)', async () => {
  const name = uniqueTenant('bkbad');
  await tenantWithAttachment(name);
  await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
  await expect.poll(async () => (await backups(name)).length, { timeout: 60_000 }).toBe(2);
  const [database] = await backups(name);

  await overwriteObject(database!.path, 'not the dump');

  const file = path.join(tempDir('corrupt'), 'database.dump');
  const read = store.getFile(database!.path, file, database!.sha256);
  await expect(read).rejects.toBeInstanceOf(ChecksumMismatchError);
  await expect(read).rejects.toThrow(`object ${database!.path} is corrupt`);
});
