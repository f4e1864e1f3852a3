/**
 * A platform service started as its own process, as production runs it: its output kept for the
 * test's assertions and messages, ready once its /healthz answers.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/local-servers.js';
import { testConfig } from './env.js';

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
}

const answers = (url: string) =>
  fetch(url).then(
    (r) => r.ok,
    () => false,
  );

/**
 * Spawns `command args` with `options` and waits up to 30 s for `healthUrl` to answer 2xx; a process
 * that exits first or never answers is killed and the error carries its output.
 */
export async function startServiceProcess(
  name: string,
  command: string,
  args: string[],
  options: SpawnOptions,
  healthUrl: string,
): Promise<ServiceProcess> {
  let output = '';
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const deadline = Date.now() + 30_000;
  while (!(await answers(healthUrl))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      if (child.exitCode === null) child.kill('SIGKILL');
      throw new Error(`${name} did not start:\n${output}`);
    }
    await sleep(100);
  }
  return { child, output: () => output };
}

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The platform service `script` (a path from the repository's root) run by Node with tsx, as its
 * own process in the test environment (PATH, NODE_ENV=test and `env`), ready once `healthUrl` answers.
 */
export function startNodeService(
  name: string,
  script: string,
  env: Record<string, string>,
  healthUrl: string,
): Promise<ServiceProcess> {
  return startServiceProcess(
    name,
    process.execPath,
    ['--import', 'tsx', `${root}${script}`],
    { cwd: root, env: { PATH: process.env.PATH, NODE_ENV: 'test', ...env } },
    healthUrl,
  );
}

/**
 * The events service (`services/events/server.ts`) as its own process on a free port, on the test
 * run's PostgreSQL and Redis, with `env` added (LOG_LEVEL warn unless given).
 */
export async function startEventsProcess(env: Record<string, string> = {}): Promise<ServiceProcess & { url: string }> {
  const c = await testConfig();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startNodeService(
    'events service',
    'services/events/server.ts',
    {
      LOG_LEVEL: 'warn',
      DATABASE_URL: c.DATABASE_URL,
      REDIS_URL: c.REDIS_URL,
      EVENTS_PORT: String(port),
      EVENTS_URL: url,
      ...env,
    },
    `${url}/healthz`,
  );
  return { ...service, url };
}
