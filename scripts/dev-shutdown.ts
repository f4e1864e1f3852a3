/**
 * What `npm run dev` stops on the way out: everything it started, in reverse start order. Each part
 * gets CLOSE_TIMEOUT_MS to stop; then the next one is stopped anyway, so one stuck part never keeps
 * Ctrl-C from ending the rest. The private servers (PostgreSQL, Redis, Temporal, …) go last.
 */
import { stopAll } from './local-servers.js';

const CLOSE_TIMEOUT_MS = 15_000;

/**
 * Standard output and error closed under us are no reason to stop half-way: `npm run dev | tee
 * dev.log` loses its reader on Ctrl-C (tee gets the interrupt too), and a write to a pipe without a
 * reader fails with EPIPE, which, unhandled, ends the process in the middle of its shutdown, its
 * servers killed and their pid files left behind. What is written after that is lost; the
 * shutdown goes on. Any other error on them is thrown as before.
 */
export function keepGoingWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
}

export interface Closable {
  close(): Promise<unknown>;
}

export class DevShutdown {
  private readonly parts: { name: string; close: () => Promise<unknown> }[] = [];
  private stopping = false;

  /** Registers a started part; returns it, so that a start reads `const x = shutdown.add('x', await startX())`. */
  add<T extends Closable>(name: string, part: T): T {
    this.parts.push({ name, close: () => part.close() });
    return part;
  }

  async stop(code = 0): Promise<never> {
    if (this.stopping) return new Promise<never>(() => {});
    this.stopping = true;
    console.log('\nStopping the platform…');
    for (const { name, close } of this.parts.reverse()) await closeWithin(name, close);
    await stopAll();
    console.log('Stopped.');
    process.exit(code);
  }
}

async function closeWithin(name: string, close: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      console.error(`${name} did not stop within ${CLOSE_TIMEOUT_MS / 1000} s; going on`);
      resolve();
    }, CLOSE_TIMEOUT_MS);
  });
  await Promise.race([close().catch((err) => console.error(`${name}: ${String(err)}`)), timeout]);
  clearTimeout(timer);
}
