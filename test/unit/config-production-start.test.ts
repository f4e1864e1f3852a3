/**
 * A platform process started for production with the ERP stand-in or a development secret stops at
 * once, naming each refused setting (lib/config.ts), before it connects to anything.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { PRODUCTION } from '../support/production-config.js';

const root = path.resolve(import.meta.dirname, '../..');

function start(file: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, file)], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

it.each(['api/server.ts', 'worker/index.ts'])(
  '%s with NODE_ENV=production, the ERP stand-in and a development secret exits 1 naming both',
  { timeout: 90_000 },
  async (file) => {
    const { AUTH_JWT_SECRET: _left, ...env } = PRODUCTION;
    const { code, stderr } = await start(file, { ...env, ERP_BACKEND: 'standin' });
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid configuration for production (NODE_ENV=production):');
    expect(stderr).toContain('ERP_BACKEND: the ERP stand-in (standin) is for development and tests');
    expect(stderr).toContain('AUTH_JWT_SECRET: the development default is not a secret');
    expect(stderr).not.toMatch(/SECRETS_KEY:|CHAT_TOKEN:/);
  },
);
