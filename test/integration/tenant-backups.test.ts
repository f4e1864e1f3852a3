/**
 * Backups in the object store (§3.2, §8): a tenant's scheduled backup stores its `pg_dump` and its
 * filestore archive in the S3 store (the run's SeaweedFS, reached through a relay the test can cut),
 * each with its SHA-256, recorded together once both are stored, kept for the tier's retention.
 * With the store down the backup retries and records nothing until the store is back; an object
 * whose content changed is refused on read. An archive larger than one part (5 MiB here) goes up as
 * a multipart upload and comes back byte-identical; cut mid-upload, it leaves no upload unfinished.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { runCli } from '../../cli/index.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { inject } from 'vitest';
import { parseConfig } from '../../lib/config.js';
import { backupObjectStore, ChecksumMismatchError, type ObjectStore } from '../../lib/object-store.js';
import {
  attachmentPath,
  backupRows,
  backUpNow,
  incompleteUploads,
  overwriteObject,
  partsOfObject,
  startMultipartUpload,
  readyTenantWithAttachment,
  startBackupPlatform,
} from '../support/backups.js';
import { tempDir } from '../support/env.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { uniqueTenant, type TenantPlatform } from '../support/tenant-platform.js';
import { testKeys } from '../support/service-keys.js';

let p: TenantPlatform;
let relay: TcpProxy;
/** The run's store, reached directly (not through the relay). */
let store: ObjectStore;

const MiB = 1024 * 1024;
/** Objects larger than this go up in parts of this size: a 12 MiB archive is three parts. */
const PART_SIZE_MB = '5';

beforeAll(async () => {
  ({ p, relay } = await startBackupPlatform({ BACKUP_S3_PART_SIZE_MB: PART_SIZE_MB }));
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

/** The attachment as the tenant's filestore archive in the store holds it. */
async function attachmentInStoredArchive(name: string, key: string, sha256: string): Promise<Buffer> {
  const dir = tempDir('archive');
  const archive = path.join(dir, 'filestore.tar.gz');
  await store.getFile(key, archive, sha256);
  execFileSync('tar', ['-xzf', archive, '-C', dir]);
  return readFileSync(path.join(dir, name, 'ab', 'invoice-0001.pdf'));
}

it('an archive larger than one part goes up as a multipart upload (5 MiB parts) and restores byte-identical', async () => {
  const name = uniqueTenant('bkbig');
  const attachment = randomBytes(12 * MiB);
  await readyTenantWithAttachment(p, name, { attachment });
  const backupId = await backUpNow(p, name);

  const [database, filestore] = await backups(name);
  expect(Number(filestore!.size_bytes)).toBeGreaterThan(12 * MiB);
  expect(await partsOfObject(filestore!.path)).toBe(3);
  expect(await partsOfObject(database!.path)).toBe(1);
  expect(await incompleteUploads(`starter/${name}/`)).toEqual([]);
  expect((await attachmentInStoredArchive(name, filestore!.path, filestore!.sha256)).equals(attachment)).toBe(true);

  // restored as a new tenant, the attachment is the one backed up, byte for byte
  const res = await p.api.app.inject({
    method: 'POST',
    url: `/api/ops/tenants/${name}/restores`,
    headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
    payload: { backupId },
  });
  expect(res.statusCode).toBe(202);
  const copy = res.json().restore.name as string;
  await expect
    .poll(
      async () =>
        (
          await p.api.app.inject({ url: `/api/ops/restores/${copy}`, headers: { 'x-api-key': testKeys.operator } })
        ).json().state,
      {
        timeout: 90_000,
        interval: 250,
      },
    )
    .toBe('ready');
  expect(readFileSync(attachmentPath(p, copy)).equals(attachment)).toBe(true);
}, 180_000);

it('with the store going down mid-upload, the backup retries, records nothing half-made and leaves no multipart upload unfinished', async () => {
  const name = uniqueTenant('bkcut');
  const attachment = randomBytes(12 * MiB);
  await readyTenantWithAttachment(p, name, { attachment });
  // the store goes away once 8 MiB of the backup are on their way: mid-way through the archive's parts
  const cut = relay.downAfter(8 * MiB);
  try {
    await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
    await cut;
    let run: Awaited<ReturnType<typeof runningBackup>> = null;
    await expect
      .poll(
        async () => {
          run ??= await runningBackup(name);
          const pending = run ? (await run.describe()).raw.pendingActivities?.[0] : undefined;
          return pending?.attempt ?? 0;
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBeGreaterThanOrEqual(2);
    expect(await backups(name)).toEqual([]);
    // the upload cut short is still in the store: it could not be aborted while the store was unreachable
    expect(await incompleteUploads(`starter/${name}/`)).toEqual([expect.stringMatching(/\/filestore\.tar\.gz$/)]);
  } finally {
    await relay.up();
  }
  // the store back: the next attempt aborts what was left, stores and records the whole backup
  await expect.poll(async () => (await backups(name)).length, { timeout: 90_000 }).toBe(2);
  expect(await incompleteUploads(`starter/${name}/`)).toEqual([]);
  const [, filestore] = await backups(name);
  expect(await partsOfObject(filestore!.path)).toBe(3);
  expect((await attachmentInStoredArchive(name, filestore!.path, filestore!.sha256)).equals(attachment)).toBe(true);
}, 180_000);

it('the prune aborts multipart uploads left unfinished (older than the given time) and leaves newer ones', async () => {
  const key = `starter/${uniqueTenant('bkstale')}/20261126T000000000Z/filestore.tar.gz`;
  await startMultipartUpload(key);
  expect(await store.abortIncompleteUploads({ initiatedBefore: new Date(Date.now() - 3600_000) })).not.toContain(key);
  expect(await incompleteUploads(key)).toEqual([key]);
  expect(await store.abortIncompleteUploads({ initiatedBefore: new Date(Date.now() + 60_000) })).toContain(key);
  expect(await incompleteUploads(key)).toEqual([]);
});

/** Runs `npm run cli -- <args>` in this process against the platform's ops API; its exit code and what it printed. */
async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  process.env.PLANA_API_URL = p.cfg.API_PUBLIC_URL;
  process.env.OPS_API_KEY = testKeys.operator;
  const lines: string[] = [];
  const say = (...a: unknown[]) => void lines.push(a.join(' '));
  const log = vi.spyOn(console, 'log').mockImplementation(say);
  const error = vi.spyOn(console, 'error').mockImplementation(say);
  try {
    return { code: await runCli(args), out: lines.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

it('backup <tenant> backs it up now as its schedule does: workflow backup:<tenant>:manual-<time>, stored and listed', async () => {
  const name = uniqueTenant('bknow');
  await tenantWithAttachment(name, 'pro');
  expect(await backups(name)).toEqual([]);

  const started = await cli('backup', name);
  expect(started.code).toBe(0);
  const workflowId = /workflow id: (\S+)/.exec(started.out)?.[1];
  expect(workflowId).toMatch(new RegExp(`^backup:${name}:manual-\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$`));
  expect(started.out).toContain(
    `Temporal UI: ${p.cfg.TEMPORAL_UI_URL}/namespaces/default/workflows/${encodeURIComponent(workflowId!)}`,
  );

  // the schedule's action: the backupTenant workflow with the schedule's input and search attributes
  const run = p.temporal.workflow.getHandle(workflowId!);
  await run.result();
  const described = await run.describe();
  expect(described.type).toBe('backupTenant');
  expect(described.typedSearchAttributes.get(searchAttributes.tenant)).toBe(name);
  expect(described.typedSearchAttributes.get(searchAttributes.tier)).toBe('pro');
  const rows = await backups(name);
  expect(rows.map((r) => r.kind)).toEqual(['database', 'filestore']);
  for (const row of rows) expect(row).toMatchObject({ storage: 'object-store', days: 90 });
  expect((await cli('backups', name)).out).toContain(rows[0]!.backup_id);

  // the ops route answers the same way; a tenant the platform does not know is a 404 (CLI exit code 4)
  const again = await p.api.app.inject({
    method: 'POST',
    url: `/api/ops/tenants/${name}/backups`,
    headers: { 'x-api-key': testKeys.operator },
  });
  expect(again.statusCode).toBe(202);
  expect(again.json()).toMatchObject({
    tenant: name,
    workflowId: expect.stringMatching(new RegExp(`^backup:${name}:manual-`)),
    scheduleId: `backup:${name}`,
    temporalUiUrl: expect.stringContaining(p.cfg.TEMPORAL_UI_URL),
  });
  const unknown = await cli('backup', 'no-such-tenant');
  expect(unknown).toEqual({ code: 4, out: 'error: Tenant "no-such-tenant" is not known to the platform.' });
});
