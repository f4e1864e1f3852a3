/**
 * An S3-compatible object store (AWS S3, SeaweedFS, MinIO…) through the AWS SDK v3: whole files in
 * and out, each checked against its SHA-256. A file up to one part's size is one PUT that sends the
 * digest (`x-amz-checksum-sha256`, which S3 verifies on receipt); a larger one streams from disk as a
 * multipart upload (lib-storage's Upload) whose every part carries its own SHA-256, and the store's
 * composite digest of the parts must equal the one computed from the file. Either way the file's
 * SHA-256 is kept in the object's metadata, and a get hashes what arrives and refuses a file whose
 * digest differs from the one the caller recorded. A multipart upload that fails is aborted (no half
 * object); one the store could not be told to abort (it was down) is aborted before the key's next
 * upload, or by the sweep of stale uploads.
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
  ListMultipartUploadsCommand,
  AbortMultipartUploadCommand,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Config } from './config.js';

/** The settings an object store is made from (BACKUP_S3_*). */
export const objectStoreSettings = {
  BACKUP_S3_ENDPOINT: true,
  BACKUP_S3_REGION: true,
  BACKUP_S3_BUCKET: true,
  BACKUP_S3_ACCESS_KEY_ID: true,
  BACKUP_S3_SECRET_ACCESS_KEY: true,
  BACKUP_S3_FORCE_PATH_STYLE: true,
  BACKUP_S3_PART_SIZE_MB: true,
} as const;

export type ObjectStoreConfig = Pick<Config, keyof typeof objectStoreSettings>;

const MiB = 1024 * 1024;
/** S3's most parts in one multipart upload: a larger file gets larger parts. */
const MAX_PARTS = 10_000;

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
    /** Files larger than this go up in parts of this size. */
    readonly partSizeBytes: number,
  ) {}

  /** Uploads `file` as `key`; resolves once the store has the whole object and has verified its digest. */
  async putFile(key: string, file: string): Promise<StoredObject> {
    const { size } = await stat(file);
    return size > this.partSizeBytes ? this.putFileInParts(key, file, size) : this.putFileWhole(key, file, size);
  }

  /** One PUT carrying the file's SHA-256. */
  private async putFileWhole(key: string, file: string, size: number): Promise<StoredObject> {
    const sha256 = await sha256OfFile(file);
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

  /**
   * A multipart upload streamed from disk, each part with its SHA-256 (the store verifies each on
   * receipt). An upload of `key` an earlier attempt left behind is aborted first; this one is aborted
   * by lib-storage if it fails. The completed object's composite digest (the SHA-256 of the parts'
   * digests) must be the file's, else the object is deleted and the put fails.
   */
  private async putFileInParts(key: string, file: string, size: number): Promise<StoredObject> {
    await this.abortIncompleteUploads({ key });
    const partSize = Math.max(this.partSizeBytes, Math.ceil(size / MAX_PARTS));
    const { sha256, partsSha256 } = await digestsOfFile(file, partSize);
    const upload = new Upload({
      client: this.client,
      partSize,
      leavePartsOnError: false,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: createReadStream(file),
        ContentLength: size,
        ChecksumAlgorithm: 'SHA256',
        Metadata: { sha256 },
      },
    });
    const { ChecksumSHA256: stored } = await upload.done();
    if (stored !== undefined && stored !== partsSha256) {
      await this.delete(key);
      throw new Error(
        `object ${key} arrived corrupt: the store's SHA-256 of its parts is ${stored}, the file's is ${partsSha256}`,
      );
    }
    return { key, sha256, sizeBytes: size };
  }

  /**
   * Aborts the multipart uploads never completed: those of `key`, or those started before
   * `initiatedBefore` (anywhere in the bucket). Returns the keys whose uploads were aborted.
   */
  async abortIncompleteUploads(which: { key: string } | { initiatedBefore: Date }): Promise<string[]> {
    const aborted: string[] = [];
    let markers: { KeyMarker?: string; UploadIdMarker?: string } = {};
    for (;;) {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          ...('key' in which ? { Prefix: which.key } : {}),
          ...markers,
        }),
      );
      for (const u of page.Uploads ?? []) {
        const stale =
          'key' in which ? u.Key === which.key : u.Initiated !== undefined && u.Initiated < which.initiatedBefore;
        if (!stale) continue;
        await this.client.send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }),
        );
        aborted.push(u.Key!);
      }
      if (!page.IsTruncated) return aborted;
      markers = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
    }
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
  return new ObjectStore(client, cfg.BACKUP_S3_BUCKET, cfg.BACKUP_S3_PART_SIZE_MB * MiB);
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The file's SHA-256 and the composite digest S3 gives a multipart object of it in parts of
 * `partSize`: the base64 SHA-256 of the parts' SHA-256s, then `-<number of parts>`.
 */
export async function digestsOfFile(file: string, partSize: number): Promise<{ sha256: string; partsSha256: string }> {
  const whole = createHash('sha256');
  const parts: Buffer[] = [];
  let part = createHash('sha256');
  let inPart = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    whole.update(chunk);
    for (let at = 0; at < chunk.length;) {
      const take = Math.min(partSize - inPart, chunk.length - at);
      part.update(chunk.subarray(at, at + take));
      at += take;
      inPart += take;
      if (inPart === partSize) {
        parts.push(part.digest());
        part = createHash('sha256');
        inPart = 0;
      }
    }
  }
  if (inPart > 0) parts.push(part.digest());
  const composite = createHash('sha256').update(Buffer.concat(parts)).digest('base64');
  return { sha256: whole.digest('hex'), partsSha256: `${composite}-${parts.length}` };
}
