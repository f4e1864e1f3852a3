/**
 * A real Odoo HTTP server of the version its source is, 17, 18 or 19 (`odoo-bin --db-filter=^%h$`:
 * the database named after the Host serves it, as §4.7 says) started from ODOO_SRC with the cached venv (scripts/odoo-setup.sh), on
 * ERP_DATABASE_URL's PostgreSQL. Used by the real-Odoo suite and by `ERP_BACKEND=odoo npm run dev`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { odooAddonsPathArg, odooDbArgs, type OdooRuntime } from './odoo-templates.js';
import { freePort } from './local-servers.js';

export interface OdooServer {
  url: string;
  runtime?: OdooRuntime;
  close(): Promise<void>;
}

/** Whether an Odoo answers `GET /web/health` with 200 at `url`. */
export function odooAnswers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(new URL('/web/health', url), { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

/** odoo-bin from the runtime's ODOO_SRC on `port` (a free one by default), serving the database named after the Host. */
export async function startOdoo(opts: {
  runtime: OdooRuntime;
  erpDatabaseUrl: string;
  port?: number;
}): Promise<OdooServer> {
  const port = opts.port ?? (await freePort());
  const { runtime } = opts;
  const child: ChildProcess = spawn(
    runtime.python,
    [
      path.join(runtime.src, 'odoo-bin'),
      odooAddonsPathArg(runtime.src),
      `--data-dir=${runtime.dataDir}`,
      ...odooDbArgs(opts.erpDatabaseUrl),
      '--db-filter=^%h$',
      `--http-port=${port}`,
      '--http-interface=127.0.0.1',
      '--max-cron-threads=0',
      '--log-level=warn',
    ],
    { cwd: runtime.src, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-8_000)));
  let closing = false;
  // an Odoo that stops by itself is a failure whoever watches it must be able to read
  child.once('exit', (code, signal) => {
    if (!closing) console.error(`odoo-bin (${runtime.src}) stopped by itself (${code ?? signal}):\n${log}`);
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 120 && !(await odooAnswers(url)); i++) {
    if (child.exitCode !== null) throw new Error(`odoo-bin exited with ${child.exitCode}: ${log}`);
    await sleep(500);
  }
  return {
    url,
    runtime,
    async close() {
      if (child.exitCode !== null) return;
      closing = true;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    },
  };
}
