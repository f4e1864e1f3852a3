/** A private Redis on loopback (scripts/local-servers.ts). */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ManagedProcess, waitForPort } from './managed-process.js';

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startRedis(opts: { dir: string; port: number; persistent?: boolean }): Promise<RedisServer> {
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    '--port',
    String(opts.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    opts.dir,
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
  ];
  if (opts.persistent) args.push('--appendonly', 'yes');
  else args.push('--save', '', '--appendonly', 'no');
  const proc = new ManagedProcess(
    'redis',
    'redis-server',
    args,
    path.join(opts.dir, 'redis.log'),
    path.join(opts.dir, 'redis.pid'),
  );
  await waitForPort(opts.port, 15_000, proc);
  return { url: `redis://127.0.0.1:${opts.port}`, port: opts.port, stop: () => proc.stop() };
}
