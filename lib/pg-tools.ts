/**
 * PostgreSQL's client tools (pg_dump, pg_restore) against a server given by URL: host, port and user
 * as arguments, the password through the environment, never the command line (visible in `ps`).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function runPgTool(
  tool: 'pg_dump' | 'pg_restore',
  opts: { serverUrl: string; pgBin?: string; maxBuffer?: number },
  args: string[],
): Promise<void> {
  const url = new URL(opts.serverUrl);
  await run(
    opts.pgBin ? path.join(opts.pgBin, tool) : tool,
    ['--host', url.hostname, '--port', url.port || '5432', '--username', decodeURIComponent(url.username), ...args],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) }, maxBuffer: opts.maxBuffer ?? 1024 * 1024 },
  );
}
