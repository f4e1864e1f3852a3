/** The Temporal dev server on loopback, with the platform's search attributes (scripts/local-servers.ts). */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { searchAttributeRegistrations } from '../domain/workflow-search-attributes.js';
import { ManagedProcess, waitForPort } from './managed-process.js';

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

export interface TemporalServer {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

/**
 * What the Temporal servers started here find in their environment beside ours: no tracing of their
 * own. They read OTEL_TRACES_EXPORTER too, and refuse to start on the platform's `zipkin`
 * ("unsupported OTEL exporter"), which `npm run dev` sets for the platform's processes.
 */
export const TEMPORAL_SERVER_ENV = { OTEL_TRACES_EXPORTER: 'none' };

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
    'SIGTERM',
    {},
    TEMPORAL_SERVER_ENV,
  );
  const address = `127.0.0.1:${opts.port}`;
  await waitForTemporal(address, proc);
  if (opts.uiPort) await waitForPort(opts.uiPort, 30_000, proc);
  return { address, uiUrl: opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : undefined, stop: () => proc.stop() };
}

/** Waits until the Temporal frontend at `address` answers (or `proc` exits). */
export async function waitForTemporal(address: string, proc: ManagedProcess, timeoutMs = 60_000) {
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
