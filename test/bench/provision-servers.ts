/**
 * The real servers of `npm run bench:provision`, in a throw-away folder on loopback: PostgreSQL,
 * Redis, the Kubernetes API server and one of the two Temporal shapes (BENCH_TEMPORAL): `dev`, the
 * Temporal dev server (one process, SQLite; the default), or `cluster`, the production-shaped
 * Temporal server on that PostgreSQL (docs/temporal-cluster.md). With the pid of each, so the bench
 * can read their CPU time.
 */
import path from 'node:path';
import {
  freePort,
  startKubernetes,
  startPostgres,
  startRedis,
  startTemporal,
  type KubernetesServer,
  type PostgresServer,
} from '../../scripts/local-servers.js';
import { startTemporalCluster, temporalPostgresFrom, type TemporalKind } from '../../scripts/local-temporal-cluster.js';
import { pidFromFile } from './provision-figures.js';

export interface BenchServers {
  pg: PostgresServer;
  kube: KubernetesServer;
  redisUrl: string;
  temporalAddress: string;
  /** The root process of each server (PostgreSQL's postmaster: its backends are its children). */
  pids: { 'API server': number; etcd: number; PostgreSQL: number; Redis: number; Temporal: number };
}

export function temporalKindFromEnv(value: string | undefined): TemporalKind {
  const kind = value ?? 'dev';
  if (kind === 'dev' || kind === 'cluster') return kind;
  throw new Error(
    `BENCH_TEMPORAL must be "dev" (the Temporal dev server) or "cluster" (the production-shaped Temporal on PostgreSQL), not "${kind}"`,
  );
}

export async function startBenchServers(dir: string, kind: TemporalKind): Promise<BenchServers> {
  const [pg, redis, kube] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    freePort().then((port) => startRedis({ dir: path.join(dir, 'redis'), port })),
    startKubernetes({ dir: path.join(dir, 'kubernetes') }),
  ]);
  const temporal = await startTemporalOfKind(path.join(dir, 'temporal'), kind, pg);
  return {
    pg,
    kube,
    redisUrl: redis.url,
    temporalAddress: temporal.address,
    pids: {
      'API server': kube.pid,
      etcd: kube.etcdPid,
      PostgreSQL: pidFromFile(path.join(dir, 'postgres', 'postgres.pid')),
      Redis: pidFromFile(path.join(dir, 'redis', 'redis.pid')),
      Temporal: temporal.pid,
    },
  };
}

/**
 * One of the two Temporal shapes in `dir` on a free port: the dev server, or the production-shaped
 * server with its databases on `pg` (required for it). With the pid of its process.
 */
export async function startTemporalOfKind(
  dir: string,
  kind: TemporalKind,
  pg?: PostgresServer,
): Promise<{ address: string; pid: number }> {
  const port = await freePort();
  if (kind === 'cluster' && !pg) throw new Error('the production-shaped Temporal needs a PostgreSQL');
  const server =
    kind === 'dev'
      ? await startTemporal({ dir, port })
      : await startTemporalCluster({ dir, port, postgres: temporalPostgresFrom(pg!.urlFor('postgres')) });
  return {
    address: server.address,
    pid: pidFromFile(path.join(dir, kind === 'dev' ? 'temporal.pid' : 'temporal-server.pid')),
  };
}
