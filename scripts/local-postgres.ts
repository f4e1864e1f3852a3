/** A private PostgreSQL cluster on loopback (scripts/local-servers.ts). */
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManagedProcess } from './managed-process.js';

/** Directory holding PostgreSQL's server binaries (initdb, postgres). */
export function findPgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(root, versions[0], 'bin');
  }
  try {
    return path.dirname(execFileSync('which', ['initdb'], { encoding: 'utf8' }).trim());
  } catch {
    throw new Error('PostgreSQL server binaries (initdb, postgres) not found; run `npm run bootstrap` first.');
  }
}

function serviceUser(name: string): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  // PostgreSQL refuses to run as root: run it as the `postgres` system user when we are root.
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export interface PostgresServer {
  url: string;
  port: number;
  /** Connection string for database `db` on the same server and user. */
  urlFor(db: string): string;
  stop(): Promise<void>;
}

export async function startPostgres(opts: {
  dir: string;
  port: number;
  user?: string;
  password?: string;
  database?: string;
}): Promise<PostgresServer> {
  const user = opts.user ?? 'plana';
  const password = opts.password ?? 'plana';
  const database = opts.database ?? 'plana';
  const bin = findPgBin();
  const ids = serviceUser('postgres');
  const dataDir = path.join(opts.dir, 'pgdata');
  mkdirSync(opts.dir, { recursive: true });
  if (ids.uid !== undefined) chownSync(opts.dir, ids.uid, ids.gid!);
  const logFile = path.join(opts.dir, 'postgres.log');

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) initCluster(bin, dataDir, opts.dir, user, password, ids);

  const proc = new ManagedProcess(
    'postgres',
    path.join(bin, 'postgres'),
    [
      '-D',
      dataDir,
      '-p',
      String(opts.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${opts.dir}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ],
    logFile,
    path.join(opts.dir, 'postgres.pid'),
    'SIGINT', // fast shutdown
    ids,
  );
  const urlFor = (db: string) =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${db}`;
  await waitForPostgres(urlFor('postgres'), proc);
  const pg = (await import('pg')).default;
  const admin = new pg.Client({ connectionString: urlFor('postgres') });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
  return { url: urlFor(database), port: opts.port, urlFor, stop: () => proc.stop() };
}

async function waitForPostgres(url: string, proc: ManagedProcess, timeoutMs = 30_000) {
  const pg = (await import('pg')).default;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`postgres exited early; see ${proc.logFile}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      lastError = err;
      await client.end().catch(() => {});
      await sleep(100);
    }
  }
  throw new Error(`postgres not ready within ${timeoutMs} ms (${String(lastError)}); see ${proc.logFile}`);
}

/** A new cluster in `dataDir`: its superuser `user` with `password` (scram-sha-256), UTF-8, no locale. */
function initCluster(
  bin: string,
  dataDir: string,
  dir: string,
  user: string,
  password: string,
  ids: { uid?: number; gid?: number },
): void {
  const pwFile = path.join(dir, '.pwfile');
  writeFileSync(pwFile, password, { mode: 0o600 });
  if (ids.uid !== undefined) chownSync(pwFile, ids.uid, ids.gid!);
  try {
    execFileSync(
      path.join(bin, 'initdb'),
      [
        '-D',
        dataDir,
        '-U',
        user,
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '-E',
        'UTF8',
        '--no-locale',
        '--no-sync',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], ...ids },
    );
  } finally {
    rmSync(pwFile, { force: true });
  }
}
