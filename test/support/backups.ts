/**
 * What the backup, restore and drill tests share: a tenant platform whose object store (the run's
 * SeaweedFS) is reached through a relay the test can cut, Ready tenants with an attachment, a
 * backup taken now, an object changed behind the platform's back, and SQL in a tenant's database.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, inject } from 'vitest';
import {
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import pg from 'pg';
import { databaseUrl } from '../../domain/erp/tenant-database.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { applyTenant, isReady, startTenantPlatform, waitForStatus, type TenantPlatform } from './tenant-platform.js';

/** A tenant platform whose backups go through `relay` to the run's object store. */
export async function startBackupPlatform(
  env: Record<string, string> = {},
): Promise<{ p: TenantPlatform; relay: TcpProxy }> {
  const endpoint = new URL(inject('objectStoreEnv').BACKUP_S3_ENDPOINT!);
  const relay = await startTcpProxy({ host: endpoint.hostname, port: Number(endpoint.port) });
  const p = await startTenantPlatform({ BACKUP_S3_ENDPOINT: relay.url, ...env });
  return { p, relay };
}

export const hostOf = (p: TenantPlatform, name: string) => `${name}.${p.cfg.TENANT_DOMAIN}`;

/** The attachment the tests put in a tenant's filestore. */
export const attachmentPath = (p: TenantPlatform, name: string) =>
  path.join(path.resolve(p.cfg.FILESTORE_ROOT), name, 'ab', 'invoice-0001.pdf');

export async function inTenantDb<T>(
  p: TenantPlatform,
  database: string,
  fn: (db: pg.Client) => Promise<T>,
): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl(p.cfg.ERP_DATABASE_URL, database) });
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end();
  }
}

/** Applies the tenant, waits for Ready and writes `attachment` into its filestore. */
export async function readyTenantWithAttachment(
  p: TenantPlatform,
  name: string,
  opts: { tier?: string; attachment: string | Buffer },
): Promise<void> {
  expect(await applyTenant(p, name, { tier: opts.tier ?? 'starter' })).toBe('created');
  await waitForStatus(p, name, isReady);
  mkdirSync(path.dirname(attachmentPath(p, name)), { recursive: true });
  writeFileSync(attachmentPath(p, name), opts.attachment);
}

/** The tenant's backup rows (database and filestore), oldest first. */
export async function backupRows(p: TenantPlatform, name: string) {
  return (
    await p.pool.query<{
      kind: string;
      path: string;
      storage: string;
      sha256: string;
      backup_id: string;
      size_bytes: string;
      days: number;
    }>(
      `SELECT kind, path, storage, sha256, backup_id, size_bytes,
              extract(day FROM expires_at - created_at)::int AS days
         FROM tenant_backups WHERE tenant = $1 ORDER BY id`,
      [name],
    )
  ).rows;
}

/** Triggers the tenant's backup schedule and waits until `count` backup rows are recorded; returns the latest backup id. */
export async function backUpNow(p: TenantPlatform, name: string, count = 2): Promise<string> {
  await p.temporal.schedule.getHandle(`backup:${name}`).trigger();
  await expect.poll(async () => (await backupRows(p, name)).length, { timeout: 60_000 }).toBe(count);
  return (await backupRows(p, name)).at(-1)!.backup_id;
}

/** The run's object store, reached directly (not through a relay), as a plain S3 client. */
async function withStore<T>(fn: (s3: S3Client, bucket: string) => Promise<T>): Promise<T> {
  const env = inject('objectStoreEnv');
  const s3 = new S3Client({
    endpoint: env.BACKUP_S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: env.BACKUP_S3_ACCESS_KEY_ID!, secretAccessKey: env.BACKUP_S3_SECRET_ACCESS_KEY! },
  });
  try {
    return await fn(s3, env.BACKUP_S3_BUCKET!);
  } finally {
    s3.destroy();
  }
}

/** Changes an object behind the platform's back (what bit rot or a tampering would do). */
export async function overwriteObject(key: string, body: string): Promise<void> {
  await withStore((s3, Bucket) => s3.send(new PutObjectCommand({ Bucket, Key: key, Body: body })));
}

/** How many parts the store holds the object in (1: it was one PUT), from its ETag (`"…-<parts>"` for a multipart object). */
export async function partsOfObject(key: string): Promise<number> {
  const head = await withStore((s3, Bucket) => s3.send(new HeadObjectCommand({ Bucket, Key: key })));
  return Number(/-(\d+)"?$/.exec(head.ETag ?? '')?.[1] ?? 1);
}

/** The keys of the multipart uploads the store holds unfinished under `prefix` (ListMultipartUploads). */
export async function incompleteUploads(prefix: string): Promise<string[]> {
  const page = await withStore((s3, Bucket) => s3.send(new ListMultipartUploadsCommand({ Bucket, Prefix: prefix })));
  return (page.Uploads ?? []).map((u) => u.Key!);
}

/** Starts a multipart upload of `key` and leaves it unfinished (what an upload cut short leaves). */
export async function startMultipartUpload(key: string): Promise<void> {
  await withStore((s3, Bucket) => s3.send(new CreateMultipartUploadCommand({ Bucket, Key: key })));
}
