/**
 * Starts the real servers the platform needs on this machine, on loopback only: a private
 * PostgreSQL cluster, a private Redis and the Temporal dev server. Used by `npm run dev` and by
 * the test run's global setup. Every process started here is stopped when the parent stops,
 * normally or not (signal handlers plus an exit hook), and a pid file lets the next start clean
 * up after a parent that was killed outright.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  rmSync,
  chownSync,
  openSync,
} from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { searchAttributeRegistrations } from '../domain/workflow-search-attributes.js';

export const TEMPORAL_CLI_VERSION = '1.5.1';
export const temporalCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `temporal-${TEMPORAL_CLI_VERSION}`,
);

/** The Temporal CLI binary: $TEMPORAL_CLI, the project's cached build, or `temporal` on PATH. */
export function findTemporalCli(): string {
  const candidates = [process.env.TEMPORAL_CLI, path.join(temporalCacheDir, 'temporal')].filter(Boolean) as string[];
  for (const c of candidates) if (existsSync(c)) return c;
  try {
    const out = execFileSync('temporal', ['--version'], { encoding: 'utf8' });
    if (out.includes(TEMPORAL_CLI_VERSION)) return 'temporal';
  } catch {
    /* not on PATH */
  }
  throw new Error(`Temporal CLI ${TEMPORAL_CLI_VERSION} not found; run \`npm run bootstrap\` first.`);
}

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

/**
 * A port that is free now, for a server started next. Taken below the kernel's ephemeral range
 * (ip_local_port_range, 32768–60999 on Linux): a port the kernel handed out (port 0) can be given
 * again to any outgoing connection before our server binds it, and under a loaded test run one was
 * (EADDRINUSE). Ports here are only ever taken by a listen.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port found between 20000 and 32000');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function waitForPort(port: number, timeoutMs: number, proc: ManagedProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`${proc.name} exited early; see ${proc.logFile}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${proc.name} did not listen on port ${port} within ${timeoutMs} ms; see ${proc.logFile}`);
}

const running = new Set<ManagedProcess>();

let ownProcessGroups = false;
/**
 * Start servers in process groups of their own, so a Ctrl-C in the terminal reaches only the
 * supervisor, which then stops the platform's processes first and the servers last, in order
 * (`npm run dev`). Off by default: a test run's servers stay in its process group, so whatever
 * kills the run kills them too.
 */
export function startServersInOwnProcessGroups() {
  ownProcessGroups = true;
}

/** A child process we own: output to a log file, a pid file, stopped with a signal then SIGKILL. */
export class ManagedProcess {
  exited = false;
  private readonly exit: Promise<void>;
  readonly child: ChildProcess;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    readonly logFile: string,
    private readonly pidFile: string,
    private readonly stopSignal: NodeJS.Signals = 'SIGTERM',
    ids: { uid?: number; gid?: number } = {},
  ) {
    killStale(pidFile);
    const out = openSync(logFile, 'a');
    this.child = spawn(command, args, { stdio: ['ignore', out, out], detached: ownProcessGroups, ...ids });
    writeFileSync(pidFile, String(this.child.pid));
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.once('exit', () => {
      this.exited = true;
      running.delete(this);
      rmSync(this.pidFile, { force: true });
    });
    running.add(this);
    installExitHooks();
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.exited) return;
    this.child.kill(this.stopSignal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exit;
    clearTimeout(timer);
  }
}

function killStale(pidFile: string) {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
  rmSync(pidFile, { force: true });
}

let hooksInstalled = false;
function installExitHooks() {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // Last resort when the parent exits without stopping its servers: no orphans.
  process.on('exit', () => {
    for (const p of running) p.child.kill('SIGKILL');
  });
}

/** Stops every server this process started (in reverse start order). */
export async function stopAll(): Promise<void> {
  for (const p of [...running].reverse()) await p.stop();
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

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const pwFile = path.join(opts.dir, '.pwfile');
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

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startRedis(opts: { dir: string; port: number; persistent?: boolean }): Promise<RedisServer> {
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    '--port',
    String(opts.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    opts.dir,
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
  ];
  if (opts.persistent) args.push('--appendonly', 'yes');
  else args.push('--save', '', '--appendonly', 'no');
  const proc = new ManagedProcess(
    'redis',
    'redis-server',
    args,
    path.join(opts.dir, 'redis.log'),
    path.join(opts.dir, 'redis.pid'),
  );
  await waitForPort(opts.port, 15_000, proc);
  return { url: `redis://127.0.0.1:${opts.port}`, port: opts.port, stop: () => proc.stop() };
}

export interface TemporalServer {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

/** The Temporal dev server with the platform's search attributes registered. */
export async function startTemporal(opts: {
  dir: string;
  port: number;
  /** Web UI port; omit for a headless server. */
  uiPort?: number;
  /** Keep histories in a SQLite file under `dir` (dev); otherwise in memory (tests). */
  persistent?: boolean;
}): Promise<TemporalServer> {
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--log-level',
    'warn',
    '--sqlite-pragma',
    'journal_mode=WAL',
    '--sqlite-pragma',
    'synchronous=OFF',
  ];
  if (opts.persistent) args.push('--db-filename', path.join(opts.dir, 'temporal.db'));
  if (opts.uiPort) args.push('--ui-ip', '127.0.0.1', '--ui-port', String(opts.uiPort));
  else args.push('--headless');
  for (const sa of searchAttributeRegistrations) args.push('--search-attribute', sa);

  const proc = new ManagedProcess(
    'temporal',
    findTemporalCli(),
    args,
    path.join(opts.dir, 'temporal.log'),
    path.join(opts.dir, 'temporal.pid'),
  );
  const address = `127.0.0.1:${opts.port}`;
  await waitForTemporal(address, proc);
  if (opts.uiPort) await waitForPort(opts.uiPort, 30_000, proc);
  return { address, uiUrl: opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : undefined, stop: () => proc.stop() };
}

async function waitForTemporal(address: string, proc: ManagedProcess, timeoutMs = 60_000) {
  const { Connection } = await import('@temporalio/client');
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`temporal exited early; see ${proc.logFile}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await sleep(200);
    }
  }
  throw new Error(`temporal not ready within ${timeoutMs} ms (${String(lastError)}); see ${proc.logFile}`);
}

/**
 * A throw-away folder for a test run or a benchmark. World-traversable, because PostgreSQL runs
 * as the `postgres` user when we are root and must reach its data folder inside it.
 */
export function throwAwayDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** PostgreSQL, Redis and a headless Temporal dev server under `dir`, each on a free loopback port. */
export async function startThrowAwayServers(dir: string) {
  const [pg, redis, temporal] = await Promise.all([
    freePort().then((port) => startPostgres({ dir: path.join(dir, 'postgres'), port })),
    freePort().then((port) => startRedis({ dir: path.join(dir, 'redis'), port })),
    freePort().then((port) => startTemporal({ dir: path.join(dir, 'temporal'), port })),
  ]);
  return { pg, redis, temporal };
}
