/**
 * The real servers `npm run dev` runs privately under DATA_DIR: PostgreSQL, Redis, the Temporal dev
 * server (or, with `--temporal=cluster`, the production-shaped Temporal), etcd with kube-apiserver
 * (the TenantClient CRD installed), SeaweedFS for the backups, VictoriaLogs, the log store, and
 * Zipkin for the traces.
 */
import path from 'node:path';
import type { Config } from '../lib/config.js';
import {
  kubectl,
  startKubernetes,
  startPostgres,
  startRedis,
  startSeaweedfs,
  startTemporal,
  startVictorialogs,
  startZipkin,
} from './local-servers.js';
import { installTenantClientCrd } from './tenant-client-crd.js';
import { startTemporalCluster, temporalPostgresFrom, type TemporalKind } from './local-temporal-cluster.js';

export const portOf = (u: string) => Number(new URL(u).port);
export const isLoopback = (u: string | undefined) =>
  !!u && ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(u).hostname);

export type DevKubernetes = Awaited<ReturnType<typeof startKubernetes>>;

export async function startDevServers(
  cfg: Config,
  dataDir: string,
  temporalKind: TemporalKind,
  step: (msg: string) => void,
): Promise<{ kube: DevKubernetes }> {
  const temporalPort = Number(cfg.TEMPORAL_ADDRESS.split(':').pop());
  const db = new URL(cfg.DATABASE_URL);
  const [kube] = await Promise.all([
    startKubernetes({ dir: path.join(dataDir, 'kubernetes'), port: cfg.DEV_KUBE_APISERVER_PORT }),
    startPostgres({
      dir: path.join(dataDir, 'postgres'),
      port: portOf(cfg.DATABASE_URL),
      user: decodeURIComponent(db.username),
      password: decodeURIComponent(db.password),
      database: db.pathname.slice(1),
    }),
    startRedis({ dir: path.join(dataDir, 'redis'), port: portOf(cfg.REDIS_URL), persistent: true }),
    temporalKind === 'dev'
      ? startTemporal({
          dir: path.join(dataDir, 'temporal'),
          port: temporalPort,
          uiPort: portOf(cfg.TEMPORAL_UI_URL),
          persistent: true,
        })
      : undefined,
    startLocalObjectStore(cfg, dataDir),
    startLocalLogStore(cfg, dataDir),
    startLocalTraceStore(cfg, dataDir),
  ]);
  if (temporalKind === 'cluster') {
    step('starting the production-shaped Temporal (Temporal server on PostgreSQL, docs/temporal-cluster.md)');
    // its databases (temporal, temporal_visibility) on the platform's PostgreSQL server
    await startTemporalCluster({
      dir: path.join(dataDir, 'temporal-cluster'),
      port: temporalPort,
      postgres: temporalPostgresFrom(cfg.DATABASE_URL),
      namespace: cfg.TEMPORAL_NAMESPACE,
    });
  }
  await installTenantClientCrd(kube.kubeconfigPath);
  // the controller's Lease lives in the platform's namespace
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.KUBERNETES_NAMESPACE } };
  kubectl(kube.kubeconfigPath, ['apply', '-f', '-'], JSON.stringify(namespace));
  return { kube };
}

/** SeaweedFS for the backups when BACKUP_S3_ENDPOINT is on this machine (the development default); otherwise the store is someone else's. */
async function startLocalObjectStore(cfg: Config, dataDir: string) {
  if (!isLoopback(cfg.BACKUP_S3_ENDPOINT) || !cfg.BACKUP_S3_ACCESS_KEY_ID || !cfg.BACKUP_S3_SECRET_ACCESS_KEY) return;
  await startSeaweedfs({
    dir: path.join(dataDir, 'seaweedfs'),
    port: portOf(cfg.BACKUP_S3_ENDPOINT!),
    bucket: cfg.BACKUP_S3_BUCKET,
    accessKeyId: cfg.BACKUP_S3_ACCESS_KEY_ID,
    secretAccessKey: cfg.BACKUP_S3_SECRET_ACCESS_KEY,
  });
}

/**
 * VictoriaLogs when LOG_STORE_URL is on this machine (the development default), keeping
 * LOG_STORE_RETENTION; the platform's own log lines go there too (LOG_STORE_URL in this process's
 * environment, which the controller's process inherits: lib/log-shipper.ts).
 */
async function startLocalLogStore(cfg: Config, dataDir: string) {
  if (!isLoopback(cfg.LOG_STORE_URL)) return;
  await startVictorialogs({
    dir: path.join(dataDir, 'victorialogs'),
    port: portOf(cfg.LOG_STORE_URL!),
    retention: cfg.LOG_STORE_RETENTION,
  });
  process.env.LOG_STORE_URL = cfg.LOG_STORE_URL;
}

/** Zipkin for the traces when the platform sends them to a Zipkin on this machine (`npm run dev`'s default). */
async function startLocalTraceStore(cfg: Config, dataDir: string) {
  if (cfg.OTEL_TRACES_EXPORTER !== 'zipkin' || !isLoopback(cfg.OTEL_EXPORTER_ZIPKIN_ENDPOINT)) return;
  await startZipkin({ dir: path.join(dataDir, 'zipkin'), port: portOf(cfg.OTEL_EXPORTER_ZIPKIN_ENDPOINT) });
}
