/**
 * A production-shaped Temporal on loopback, beside the dev server (scripts/local-temporal.ts): the
 * Temporal server built from Go modules (`go.temporal.io/server`, on first use: scripts/build-temporal-server.sh) with
 * PostgreSQL persistence and SQL visibility in two databases that its schema tool
 * (temporal-sql-tool) creates and migrates, several history shards, and its four services
 * (frontend, history, matching, worker) in one process, each on its own loopback ports. Once it
 * answers, the namespace is registered and the platform's search attributes are added where
 * missing (the worker's own start-up check, worker/search-attributes.ts). Used by
 * `npm run dev -- --temporal=cluster` and test/integration/temporal-cluster.test.ts; docs/temporal-cluster.md.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { stringify } from 'yaml';
import { ensureSearchAttributes } from '../worker/search-attributes.js';
import { TEMPORAL_SERVER_ENV, waitForTemporal, type TemporalServer } from './local-temporal.js';
import { freePort, ManagedProcess } from './managed-process.js';

export const TEMPORAL_SERVER_VERSION = '1.32.1';
export const temporalServerCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `temporal-server-${TEMPORAL_SERVER_VERSION}`,
);

/**
 * The Temporal server and its SQL schema tool, built into the cache folder on first use
 * (scripts/build-temporal-server.sh: 10-20 minutes on 2 cores, its progress on this process's output).
 */
export async function ensureTemporalServer(): Promise<{ server: string; sqlTool: string }> {
  const server = path.join(temporalServerCacheDir, 'temporal-server');
  const sqlTool = path.join(temporalServerCacheDir, 'temporal-sql-tool');
  if (!existsSync(server) || !existsSync(sqlTool)) {
    const script = fileURLToPath(new URL('build-temporal-server.sh', import.meta.url));
    const build = spawn('bash', [script, temporalServerCacheDir], { stdio: 'inherit' });
    const [code] = (await once(build, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`could not build the Temporal server ${TEMPORAL_SERVER_VERSION} (see above)`);
  }
  return { server, sqlTool };
}

/** The PostgreSQL server Temporal keeps its state in (a superuser: the schema tool creates the databases). */
export interface TemporalPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface TemporalClusterOptions {
  /** Config, dynamic config and log file go here. */
  dir: string;
  /** The frontend's gRPC port (the address clients and workers use). */
  port: number;
  postgres: TemporalPostgres;
  /** The two databases (default `temporal` and `temporal_visibility`). */
  databases?: { main: string; visibility: string };
  /** Default `default`, as the dev server's. */
  namespace?: string;
  /** History shards (default 4): fixed for the life of the databases. */
  historyShards?: number;
}

export interface TemporalCluster extends TemporalServer {
  namespace: string;
  /** The server's Prometheus metrics (Temporal's own). */
  metricsUrl: string;
  logFile: string;
}

/** `postgres://user:password@host:port/db` of a PostgreSQL server as scripts/local-postgres.ts gives it. */
export function temporalPostgresFrom(url: string): TemporalPostgres {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
  };
}

const run = promisify(execFile);

/**
 * Creates the database when it is missing and brings its schema to the version this server
 * needs, from the schema tool's embedded PostgreSQL 12 schemas (`postgresql/v12/temporal` or
 * `…/visibility`): idempotent, so a kept data folder is migrated on the next start.
 */
async function setUpDatabase(sqlTool: string, pg: TemporalPostgres, database: string, schema: string) {
  // the password reaches the tool through its environment, never its command line
  const env = {
    PATH: process.env.PATH,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: pg.host,
    SQL_PORT: String(pg.port),
    SQL_USER: pg.user,
    SQL_PASSWORD: pg.password,
    SQL_DATABASE: database,
  };
  const tool = (...args: string[]) =>
    run(sqlTool, args, { env }).catch((err: Error & { stderr?: string }) => {
      throw new Error(
        `temporal-sql-tool ${args.join(' ')} (database ${database}) failed: ${err.stderr || err.message}`,
      );
    });
  const pgLib = (await import('pg')).default;
  const admin = new pgLib.Client({ ...pg, database: 'postgres' });
  await admin.connect();
  let created = false;
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rowCount === 0) {
      await tool('create-database');
      created = true;
    }
  } finally {
    await admin.end();
  }
  // the versioning tables at 0.0, then every versioned step up to the latest
  if (created) await tool('setup-schema', '--version', '0.0');
  await tool('update-schema', '--schema-name', schema);
}

/** The server's configuration: PostgreSQL persistence and SQL visibility, all four services on loopback. */
function serverConfig(o: {
  pg: TemporalPostgres;
  databases: { main: string; visibility: string };
  historyShards: number;
  ports: Record<'frontend' | 'frontendHttp' | 'history' | 'matching' | 'worker' | 'metrics', number> & {
    membership: Record<'frontend' | 'history' | 'matching' | 'worker', number>;
  };
  dynamicConfigFile: string;
}) {
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${o.pg.host}:${o.pg.port}`,
      connectProtocol: 'tcp',
      user: o.pg.user,
      password: o.pg.password,
      // each of the four services opens its own pools
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: o.historyShards,
      datastores: {
        'postgres-default': datastore(o.databases.main, 10),
        'postgres-visibility': datastore(o.databases.visibility, 4),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: {
        prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${o.ports.metrics}` },
      },
    },
    services: {
      frontend: service(o.ports.frontend, o.ports.membership.frontend, { httpPort: o.ports.frontendHttp }),
      history: service(o.ports.history, o.ports.membership.history),
      matching: service(o.ports.matching, o.ports.membership.matching),
      worker: service(o.ports.worker, o.ports.membership.worker),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${o.ports.frontend}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: o.dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * Dynamic configuration: search attributes added at start are used by the first workflows at once
 * (the frontend reads them from the database rather than its minute-long cache).
 */
const DYNAMIC_CONFIG = {
  'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true, constraints: {} }],
};

/** Registers `namespace` (one day's retention, as the dev server's) unless it exists. */
async function ensureNamespace(connection: Connection, namespace: string) {
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return;
  } catch (err) {
    if ((err as { code?: number }).code !== 5) throw err; // NOT_FOUND
  }
  await connection.workflowService
    .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
    .catch((err: { code?: number }) => {
      if (err.code !== 6) throw err; // ALREADY_EXISTS: registered meanwhile
    });
}

/** Waits until the frontend serves the namespace (its namespace cache refreshes every few seconds). */
async function waitForNamespace(client: Client, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.workflow.count();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`namespace ${client.options.namespace} not served: ${String(err)}`);
      await sleep(250);
    }
  }
}

/** The production-shaped Temporal: databases, configuration, server, namespace and search attributes. */
export async function startTemporalCluster(opts: TemporalClusterOptions): Promise<TemporalCluster> {
  const { server, sqlTool } = await ensureTemporalServer();
  const namespace = opts.namespace ?? 'default';
  const databases = opts.databases ?? { main: 'temporal', visibility: 'temporal_visibility' };
  mkdirSync(opts.dir, { recursive: true });
  await setUpDatabase(sqlTool, opts.postgres, databases.main, 'postgresql/v12/temporal');
  await setUpDatabase(sqlTool, opts.postgres, databases.visibility, 'postgresql/v12/visibility');

  const free = () => freePort();
  const ports = {
    frontend: opts.port,
    frontendHttp: await free(),
    history: await free(),
    matching: await free(),
    worker: await free(),
    metrics: await free(),
    membership: { frontend: await free(), history: await free(), matching: await free(), worker: await free() },
  };
  const dynamicConfigFile = path.join(opts.dir, 'dynamic-config.yaml');
  writeFileSync(dynamicConfigFile, stringify(DYNAMIC_CONFIG));
  const configFile = path.join(opts.dir, 'temporal-server.yaml');
  const config = serverConfig({
    pg: opts.postgres,
    databases,
    historyShards: opts.historyShards ?? 4,
    ports,
    dynamicConfigFile,
  });
  writeFileSync(configFile, stringify(config), { mode: 0o600 }); // it holds the database password

  const logFile = path.join(opts.dir, 'temporal-server.log');
  const proc = new ManagedProcess(
    'temporal-server',
    server,
    ['--config-file', configFile, '--allow-no-auth', 'start'],
    logFile,
    path.join(opts.dir, 'temporal-server.pid'),
    'SIGTERM',
    {},
    TEMPORAL_SERVER_ENV,
  );
  const address = `127.0.0.1:${opts.port}`;
  await waitForTemporal(address, proc, 120_000);

  const connection = await Connection.connect({ address });
  try {
    await ensureNamespace(connection, namespace);
    const client = new Client({ connection, namespace });
    await waitForNamespace(client);
    await ensureSearchAttributes(client, namespace);
  } finally {
    await connection.close();
  }
  return {
    address,
    namespace,
    metricsUrl: `http://127.0.0.1:${ports.metrics}/metrics`,
    logFile,
    stop: () => proc.stop(),
  };
}

/** Which Temporal `npm run dev` starts: `--temporal=dev|cluster` on its command line, else DEV_TEMPORAL, else the dev server. */
/** Which Temporal `npm run dev` runs: the dev server, or the production-shaped cluster. */
export type TemporalKind = 'dev' | 'cluster';

export function temporalKindOf(args: string[], env: string | undefined): TemporalKind {
  const flag = args.find((a) => a.startsWith('--temporal='))?.slice('--temporal='.length);
  const kind = flag ?? env ?? 'dev';
  if (kind === 'dev' || kind === 'cluster') return kind;
  throw new Error(
    `${flag !== undefined ? '--temporal' : 'DEV_TEMPORAL'} must be "dev" (the Temporal dev server) or "cluster" (the production-shaped Temporal on PostgreSQL), not "${kind}".`,
  );
}
