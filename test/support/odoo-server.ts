/**
 * A real Odoo 18 for the real-Odoo suite (npm run test:odoo): one `odoo-bin` HTTP server with
 * `--db-filter=^%h$` (the database named after the Host serves it, as §4.7 says) on the run's
 * PostgreSQL, started from ODOO_SRC with the cached venv (scripts/odoo-setup.sh); or, with
 * ODOO_URL, an Odoo that runs already (then ODOO_DATABASE_URL names its PostgreSQL server's admin
 * database and ODOO_DATA_DIR its data dir).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { odooDbArgs, odooPython, type OdooRuntime } from '../../scripts/odoo-templates.js';
import { freePort } from '../../scripts/local-servers.js';

export const ODOO_HOW_TO =
  'The real-Odoo suite needs Odoo 18: set ODOO_SRC to a folder holding odoo-bin (a copy of Odoo 18.0 Community, e.g. ' +
  '`git --git-dir=<mirror of Disassembling-Odoo/core> archive 504b0670 | tar -x -C /work/odoo-src`; Python requirements are ' +
  'installed once by scripts/odoo-setup.sh), or ODOO_URL to a running Odoo 18 started with --db-filter=^%h$ plus ' +
  'ODOO_DATABASE_URL (its PostgreSQL server, admin database) and ODOO_DATA_DIR (its data dir).';

export interface OdooServer {
  url: string;
  runtime?: OdooRuntime;
  close(): Promise<void>;
}

function healthy(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(new URL('/web/health', url), { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

export function odooRuntime(dataDir: string): OdooRuntime | undefined {
  const src = process.env.ODOO_SRC;
  return src ? { src, python: odooPython(src), dataDir } : undefined;
}

export async function startOdoo(opts: { runtime: OdooRuntime; erpDatabaseUrl: string }): Promise<OdooServer> {
  const port = await freePort();
  const { runtime } = opts;
  const child: ChildProcess = spawn(
    runtime.python,
    [
      path.join(runtime.src, 'odoo-bin'),
      '--addons-path=addons,odoo/addons',
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
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 120 && !(await healthy(url)); i++) {
    if (child.exitCode !== null) throw new Error(`odoo-bin exited with ${child.exitCode}: ${log}`);
    await sleep(500);
  }
  return {
    url,
    runtime,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    },
  };
}
