/**
 * A private log store on loopback (scripts/local-servers.ts): VictoriaLogs, where the execution log
 * is mirrored (domain/access/execution-log-mirror.ts) and every service's log lines go
 * (lib/log-store.ts). Its web UI is at /select/vmui. The binary is built once by `npm run bootstrap`
 * into the cache folder (victorialogsCacheDir).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManagedProcess, waitForPort } from './managed-process.js';

export const VICTORIALOGS_VERSION = '1.52.1';
export const victorialogsCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `victorialogs-${VICTORIALOGS_VERSION}`,
);

/** The `victoria-logs` binary: $VICTORIALOGS_BIN or the project's cached build. */
export function findVictorialogs(): string {
  const candidates = [process.env.VICTORIALOGS_BIN, path.join(victorialogsCacheDir, 'victoria-logs')].filter(
    Boolean,
  ) as string[];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(
    `VictoriaLogs ${VICTORIALOGS_VERSION} not found in ${victorialogsCacheDir}; run \`npm run bootstrap\` first.`,
  );
}

export interface LogStoreServer {
  /** The store's base URL, e.g. http://127.0.0.1:9428 (LOG_STORE_URL). */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * VictoriaLogs with its data under `dir`, HTTP on `port`, keeping `retention` (90d, the
 * specification's; a test passes a shorter one). Ready once /health answers.
 */
export async function startVictorialogs(opts: {
  dir: string;
  port: number;
  retention?: string;
}): Promise<LogStoreServer> {
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    `-storageDataPath=${path.join(opts.dir, 'data')}`,
    `-httpListenAddr=127.0.0.1:${opts.port}`,
    `-retentionPeriod=${opts.retention ?? '90d'}`,
    '-loggerLevel=WARN',
  ];
  const proc = new ManagedProcess(
    'victorialogs',
    findVictorialogs(),
    args,
    path.join(opts.dir, 'victorialogs.log'),
    path.join(opts.dir, 'victorialogs.pid'),
  );
  await waitForPort(opts.port, 30_000, proc);
  const url = `http://127.0.0.1:${opts.port}`;
  await waitForHealth(url, proc);
  return { url, port: opts.port, stop: () => proc.stop() };
}

async function waitForHealth(url: string, proc: ManagedProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`victorialogs exited early; see ${proc.logFile}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`victorialogs did not answer /health within 30 s; see ${proc.logFile}`);
}
