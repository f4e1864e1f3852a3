/**
 * The platform processes the chaos bench kills: each its own Node process, started from its entry
 * point as in production, restarted at once after a `kill -9` (as a supervisor would).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The processes killed at random, by name, with their entry points. */
export const VICTIMS = {
  worker: 'worker/index.ts',
  'account API': 'api/server.ts',
  'webhook dispatcher': 'services/webhooks/dispatcher.ts',
  'events service': 'services/events/server.ts',
  'tenant controller': 'services/tenant-controller/index.ts',
} as const;

export type Victim = keyof typeof VICTIMS;

export class PlatformProcesses {
  private readonly running = new Map<Victim, ChildProcess>();
  readonly kills: { at: number; victim: Victim }[] = [];
  private stopped = false;

  constructor(private readonly env: Record<string, string>) {}

  startAll(): void {
    for (const name of Object.keys(VICTIMS) as Victim[]) this.start(name);
  }

  private start(name: Victim): void {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, VICTIMS[name])], {
      cwd: root,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    this.running.set(name, child);
    // a process that ends by itself (not killed here) is restarted too, as its supervisor would
    child.once('exit', () => {
      if (!this.stopped && this.running.get(name) === child) setTimeout(() => this.start(name), 1_000);
    });
  }

  /** `kill -9` of one process, restarted at once. */
  killAndRestart(name: Victim): void {
    const child = this.running.get(name);
    this.kills.push({ at: Date.now(), victim: name });
    this.running.delete(name);
    child?.kill('SIGKILL');
    this.start(name);
  }

  pids(): Record<Victim, number> {
    return Object.fromEntries([...this.running].map(([name, child]) => [name, child.pid!])) as Record<Victim, number>;
  }

  async stopAll(): Promise<void> {
    this.stopped = true;
    const exits = [...this.running.values()].map(
      (child) =>
        new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve()))),
    );
    for (const child of this.running.values()) child.kill('SIGTERM');
    await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 10_000))]);
    for (const child of this.running.values()) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * Every `everyMs`, one process is killed and restarted, until `untilMs` (epoch ms). The victims are
 * drawn from a shuffled bag of every kind: random order, yet each kind dies once in every five kills
 * (a plain random pick left the events service alone for a whole 3-minute run).
 */
export async function killAtRandom(processes: PlatformProcesses, everyMs: number, untilMs: number): Promise<void> {
  let bag: Victim[] = [];
  while (Date.now() + everyMs <= untilMs) {
    await new Promise((r) => setTimeout(r, everyMs));
    if (bag.length === 0) bag = shuffled(Object.keys(VICTIMS) as Victim[]);
    processes.killAndRestart(bag.pop()!);
  }
}

/** A copy of `items` in random order (Fisher–Yates). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
