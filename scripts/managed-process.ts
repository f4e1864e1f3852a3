/**
 * The process manager behind scripts/local-servers.ts: free loopback ports, and the servers' child
 * processes (ManagedProcess), each stopped when the parent stops, normally or not (signal handlers
 * plus an exit hook); a pid file lets the next start clean up after a parent that was killed outright.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

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

export async function waitForPort(port: number, timeoutMs: number, proc: ManagedProcess): Promise<void> {
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
    /** Added to the parent's environment (e.g. a credential the server must not see on its command line). */
    env: Record<string, string> = {},
  ) {
    killStale(pidFile);
    const out = openSync(logFile, 'a');
    this.child = spawn(command, args, {
      stdio: ['ignore', out, out],
      detached: ownProcessGroups,
      env: { ...process.env, ...env },
      ...ids,
    });
    writeFileSync(pidFile, String(this.child.pid));
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.once('exit', () => {
      this.exited = true;
      running.delete(this);
      this.forgetPidFile();
    });
    running.add(this);
    installExitHooks();
  }

  /** Removes the pid file (the process is stopped, or killed outright with the parent). */
  forgetPidFile(): void {
    rmSync(this.pidFile, { force: true });
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
  // Last resort when the parent exits without stopping its servers: no orphans, and no pid files
  // of processes that are gone (the child's own exit event never comes once the parent has exited).
  process.on('exit', () => {
    for (const p of running) {
      p.child.kill('SIGKILL');
      p.forgetPidFile();
    }
  });
}

/** Stops every server this process started (in reverse start order). */
export async function stopAll(): Promise<void> {
  for (const p of [...running].reverse()) await p.stop();
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
