/**
 * Starts the real servers the platform needs on this machine, on loopback only: a private
 * PostgreSQL cluster, a private Redis, the Temporal dev server, a Kubernetes API server (etcd +
 * kube-apiserver, where TenantClients live), a SeaweedFS S3 object store for backups, a
 * VictoriaLogs log store and a Zipkin trace store. Used by
 * `npm run dev` and by the test run's global setup. Every process started here is stopped when the parent stops,
 * normally or not (signal handlers plus an exit hook), and a pid file lets the next start clean
 * up after a parent that was killed outright.
 *
 * One file per server (local-postgres.ts, local-redis.ts, local-temporal.ts, local-kubernetes.ts,
 * local-seaweedfs.ts, local-victorialogs.ts, local-zipkin.ts)
 * beside the process manager they share (managed-process.ts); this one re-exports them and starts all.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startPostgres } from './local-postgres.js';
import { startRedis } from './local-redis.js';
import { startTemporal } from './local-temporal.js';
import { startKubernetes } from './local-kubernetes.js';
import { startSeaweedfs } from './local-seaweedfs.js';
import { startVictorialogs } from './local-victorialogs.js';
import { startZipkin } from './local-zipkin.js';
import { freePort } from './managed-process.js';

export { findPgBin, startPostgres, type PostgresServer } from './local-postgres.js';
export { startRedis, type RedisServer } from './local-redis.js';
export {
  findSeaweedfs,
  SEAWEEDFS_VERSION,
  seaweedfsCacheDir,
  startSeaweedfs,
  type ObjectStoreServer,
} from './local-seaweedfs.js';
export { findZipkin, startZipkin, ZIPKIN_VERSION, zipkinCacheDir, type ZipkinServer } from './local-zipkin.js';
export {
  findVictorialogs,
  startVictorialogs,
  VICTORIALOGS_VERSION,
  victorialogsCacheDir,
  type LogStoreServer,
} from './local-victorialogs.js';
export {
  findTemporalCli,
  startTemporal,
  TEMPORAL_CLI_VERSION,
  temporalCacheDir,
  type TemporalServer,
} from './local-temporal.js';
export {
  findKubeBinary,
  kubectl,
  KUBERNETES_VERSION,
  kubernetesCacheDir,
  startKubernetes,
  type KubernetesServer,
} from './local-kubernetes.js';
export { freePort, ManagedProcess, startServersInOwnProcessGroups, stopAll, throwAwayDir } from './managed-process.js';

/**
 * PostgreSQL, Redis, a headless Temporal dev server and a Kubernetes API server under `dir`, each
 * on a free loopback port.
 */
export async function startThrowAwayServers(dir: string) {
  const [pg, redis, temporal, kube] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    freePort().then((port) => startRedis({ dir: path.join(dir, 'redis'), port })),
    freePort().then((port) => startTemporal({ dir: path.join(dir, 'temporal'), port })),
    startKubernetes({ dir: path.join(dir, 'kubernetes') }),
  ]);
  return { pg, redis, temporal, kube };
}

/** An S3 object store (SeaweedFS) under `dir` on a free loopback port, with a random secret and the backups' bucket. */
export async function startThrowAwayObjectStore(dir: string) {
  return startSeaweedfs({
    dir: path.join(dir, 'seaweedfs'),
    port: await freePort(),
    bucket: 'plana-backups',
    accessKeyId: 'plana-test',
    secretAccessKey: randomBytes(18).toString('base64url'),
  });
}

/** A log store (VictoriaLogs) under `dir` on a free loopback port, keeping `retention` (default 90d). */
export async function startThrowAwayLogStore(dir: string, retention?: string) {
  return startVictorialogs({ dir: path.join(dir, 'victorialogs'), port: await freePort(), retention });
}

/** A Zipkin trace store under `dir` on a free loopback port. */
export async function startThrowAwayZipkin(dir: string) {
  return startZipkin({ dir: path.join(dir, 'zipkin'), port: await freePort() });
}
