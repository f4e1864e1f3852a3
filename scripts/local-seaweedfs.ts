/**
 * A private S3-compatible object store on loopback (scripts/local-servers.ts): SeaweedFS's `weed mini`
 * (master, volume server, filer and S3 gateway in one process), its web UIs, WebDAV and Iceberg
 * endpoints off, with one access key, and the backups' bucket created. The binary is built once by
 * `npm run bootstrap` into the cache folder (seaweedfsCacheDir).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../lib/config.js';
import { backupObjectStore, objectStoreSettings } from '../lib/object-store.js';
import { freePort, ManagedProcess, waitForPort } from './managed-process.js';

/** SeaweedFS 4.53 (the Go module proxy serves it as this pseudo-version: its tags are not semver). */
export const SEAWEEDFS_VERSION = '4.53';
export const seaweedfsCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `seaweedfs-${SEAWEEDFS_VERSION}`,
);

/** The `weed` binary: $SEAWEEDFS_BIN or the project's cached build. */
export function findSeaweedfs(): string {
  const candidates = [process.env.SEAWEEDFS_BIN, path.join(seaweedfsCacheDir, 'weed')].filter(Boolean) as string[];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`SeaweedFS ${SEAWEEDFS_VERSION} not found in ${seaweedfsCacheDir}; run \`npm run bootstrap\` first.`);
}

export interface ObjectStoreServer {
  /** The S3 endpoint, e.g. http://127.0.0.1:8333. */
  endpoint: string;
  port: number;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The BACKUP_S3_* settings that point the platform at this store. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** `weed mini` under `dir`, S3 on `port`; its internal ports (master, volume, filer, gRPC) are taken free. */
export async function startSeaweedfs(opts: {
  dir: string;
  port: number;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}): Promise<ObjectStoreServer> {
  mkdirSync(opts.dir, { recursive: true });
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3Grpc] = await Promise.all(
    Array.from({ length: 7 }, () => freePort()),
  );
  const args = [
    'mini',
    `-dir=${opts.dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    '-master.telemetry=false',
    '-master.volumeSizeLimitMB=64',
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-filer.localSocket=${path.join(opts.dir, 'filer.sock')}`,
    `-s3.port=${opts.port}`,
    `-s3.port.grpc=${s3Grpc}`,
    `-s3.localSocket=${path.join(opts.dir, 's3.sock')}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    '-webdav=false',
    '-admin.ui=false',
  ];
  const proc = new ManagedProcess(
    'seaweedfs',
    findSeaweedfs(),
    args,
    path.join(opts.dir, 'seaweedfs.log'),
    path.join(opts.dir, 'seaweedfs.pid'),
    'SIGTERM',
    {},
    // the one identity, an admin, from the environment: never on the command line (visible in `ps`)
    { AWS_ACCESS_KEY_ID: opts.accessKeyId, AWS_SECRET_ACCESS_KEY: opts.secretAccessKey },
  );
  await waitForPort(opts.port, 60_000, proc);
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const env = {
    BACKUP_S3_ENDPOINT: endpoint,
    BACKUP_S3_BUCKET: opts.bucket,
    BACKUP_S3_ACCESS_KEY_ID: opts.accessKeyId,
    BACKUP_S3_SECRET_ACCESS_KEY: opts.secretAccessKey,
  };
  await createBucketWhenReady(env, proc);
  const { bucket, accessKeyId, secretAccessKey, port } = opts;
  return { endpoint, port, bucket, accessKeyId, secretAccessKey, env, stop: () => proc.stop() };
}

/** The S3 port listens before the filer behind it answers: the bucket is created once it does. */
async function createBucketWhenReady(env: Record<string, string>, proc: ManagedProcess): Promise<void> {
  const store = backupObjectStore(configSchema.pick(objectStoreSettings).parse(env));
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      try {
        await store.ensureBucket();
        return;
      } catch (err) {
        if (proc.exited) throw new Error(`seaweedfs exited early; see ${proc.logFile}`);
        if (Date.now() > deadline)
          throw new Error(`seaweedfs did not serve S3 within 60 s (${String(err)}); see ${proc.logFile}`);
        await sleep(250);
      }
    }
  } finally {
    store.close();
  }
}
