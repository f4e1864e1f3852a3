/**
 * An S3-compatible object store (AWS S3, SeaweedFS, MinIO…) through the AWS SDK v3: whole files in
 * and out, each checked against its SHA-256. A put sends the digest (`x-amz-checksum-sha256`, which
 * S3 verifies on receipt) and keeps it in the object's metadata; a get hashes what arrives and
 * refuses a file whose digest differs from the one the caller recorded.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  BucketAlreadyOwnedByYou,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { Config } from './config.js';

export type ObjectStoreConfig = Pick<
  Config,
  | 'BACKUP_S3_ENDPOINT'
  | 'BACKUP_S3_REGION'
  | 'BACKUP_S3_BUCKET'
  | 'BACKUP_S3_ACCESS_KEY_ID'
  | 'BACKUP_S3_SECRET_ACCESS_KEY'
  | 'BACKUP_S3_FORCE_PATH_STYLE'
>;

/** A stored object's content did not hash to the digest recorded when it was written. */
export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError';
  constructor(
    readonly key: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`object ${key} is corrupt: its SHA-256 is ${actual}, the one recorded when it was stored is ${expected}`);
  }
}

export interface StoredObject {
  key: string;
  sha256: string;
  sizeBytes: number;
}

export class ObjectStore {
  constructor(
    private readonly client: S3Client,
    readonly bucket: string,
  ) {}

  /** Uploads `file` as `key`; resolves once the store has the whole object (and, on S3, verified its digest). */
  async putFile(key: string, file: string): Promise<StoredObject> {
    const [sha256, { size }] = await Promise.all([sha256OfFile(file), stat(file)]);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: createReadStream(file),
        ContentLength: size,
        ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
        Metadata: { sha256 },
      }),
    );
    return { key, sha256, sizeBytes: size };
  }

  /** Downloads `key` into `file`, refusing it (and removing the file) unless it hashes to `sha256`. */
  async getFile(key: string, file: string, sha256: string): Promise<StoredObject> {
    const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const hash = createHash('sha256');
    let sizeBytes = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        sizeBytes += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(res.Body as Readable, tap, createWriteStream(file, { mode: 0o600 }));
    const actual = hash.digest('hex');
    if (actual !== sha256) {
      await rm(file, { force: true });
      throw new ChecksumMismatchError(key, sha256, actual);
    }
    return { key, sha256, sizeBytes };
  }

  /** Whether the store holds `key`. */
  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (err) {
      if (err instanceof NotFound) return false;
      throw err;
    }
  }

  /** Deletes `key` (a missing object is not an error, as on S3). */
  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  /** Creates the bucket unless it exists (local stores; in production the bucket is provisioned). */
  async ensureBucket(): Promise<'created' | 'exists'> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return 'exists';
    } catch {
      try {
        await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
        return 'created';
      } catch (err) {
        if (err instanceof BucketAlreadyOwnedByYou) return 'exists';
        throw err;
      }
    }
  }

  close(): void {
    this.client.destroy();
  }
}

/** The backups' object store as configured (BACKUP_S3_*). */
export function backupObjectStore(cfg: ObjectStoreConfig): ObjectStore {
  const credentials =
    cfg.BACKUP_S3_ACCESS_KEY_ID && cfg.BACKUP_S3_SECRET_ACCESS_KEY
      ? { accessKeyId: cfg.BACKUP_S3_ACCESS_KEY_ID, secretAccessKey: cfg.BACKUP_S3_SECRET_ACCESS_KEY }
      : undefined;
  const client = new S3Client({
    region: cfg.BACKUP_S3_REGION,
    endpoint: cfg.BACKUP_S3_ENDPOINT,
    forcePathStyle: (cfg.BACKUP_S3_FORCE_PATH_STYLE ?? String(Boolean(cfg.BACKUP_S3_ENDPOINT))) === 'true',
    credentials,
    // the digest is ours (x-amz-checksum-sha256 above, checked again on read); the SDK's default
    // CRC32 trailers are not understood by every S3-compatible store
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // a store that does not answer fails the attempt; the workflow's retry policy waits and tries again
    maxAttempts: 2,
  });
  return new ObjectStore(client, cfg.BACKUP_S3_BUCKET);
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
