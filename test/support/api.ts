/** An account API on the run's real servers, as most integration tests start one. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { testConfig } from './env.js';

/**
 * Starts an account API with its own port (configuration `overrides` on top of the test
 * defaults), plus a small pool for the test's own queries; `close()` stops both.
 */
export async function startTestApi(overrides: Record<string, string> = {}) {
  const cfg = await testConfig(overrides);
  const pool = createPool(cfg.DATABASE_URL, 2);
  const api = await startApi(cfg);
  return {
    cfg,
    pool,
    app: api.app,
    base: cfg.API_PUBLIC_URL,
    async close() {
      await api.close();
      await pool.end();
    },
  };
}

export type TestApi = Awaited<ReturnType<typeof startTestApi>>;

/**
 * The environment of an API process on the run's servers: `cfg`'s PostgreSQL, Redis and Temporal,
 * listening on `cfg`'s port and public URL; `more` adds settings or replaces these.
 */
export function apiProcessEnv(cfg: Config, more: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: cfg.DATABASE_URL,
    REDIS_URL: cfg.REDIS_URL,
    TEMPORAL_ADDRESS: cfg.TEMPORAL_ADDRESS,
    API_PORT: String(cfg.API_PORT),
    API_PUBLIC_URL: cfg.API_PUBLIC_URL,
    ...more,
  };
}

/**
 * The account API as its own process (`api/server.ts` under tsx), so a test sees exactly what the
 * process writes: `output()` is its whole log so far. `env` is the process's whole environment
 * apart from PATH and NODE_ENV=test; resolves once /healthz answers.
 */
export async function startApiProcess(env: Record<string, string>, baseUrl: string) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  let output = '';
  // node itself with tsx's loader, not the tsx CLI: the CLI runs the server in a child of its own,
  // which a SIGKILL of the CLI would leave running
  const child = spawn(process.execPath, ['--import', 'tsx', `${root}api/server.ts`], {
    cwd: root,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`API exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`API did not listen in 30 s:\n${output}`);
    const up = await fetch(new URL('/healthz', baseUrl)).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}
