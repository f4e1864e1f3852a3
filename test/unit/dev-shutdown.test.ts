/**
 * `npm run dev | tee dev.log`, then Ctrl-C: tee gets the interrupt too and goes, so whatever the
 * supervisor writes while it stops meets a pipe without a reader (EPIPE). The shutdown must go on
 * to the end: every part stopped, its pid files removed, exit code 0. Runs a supervisor shaped like
 * scripts/dev.ts (test/fixtures/dev-shutdown/supervisor.ts) with its output piped here, closes the
 * pipes as tee's end does, and interrupts it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const supervisor = fileURLToPath(new URL('../fixtures/dev-shutdown/supervisor.ts', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'plana-dev-shutdown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('Ctrl-C with its output piped to a reader that is gone: the supervisor still stops everything and removes its pid files', async () => {
  const run = spawn(process.execPath, ['--import', 'tsx', supervisor, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    run.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = await new Promise<string>((resolve, reject) => {
    let out = '';
    run.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/ready \d+\n/.test(out)) resolve(out);
    });
    void exited.then(() => reject(new Error(`the supervisor exited before it was ready: ${out}`)));
  });
  const sleeper = Number(/ready (\d+)/.exec(ready)![1]);
  expect(existsSync(path.join(dir, 'sleeper.pid'))).toBe(true);

  // tee's end of the pipes goes with the interrupt
  run.stdout.destroy();
  run.stderr.destroy();
  run.kill('SIGINT');

  expect(await exited).toEqual({ code: 0, signal: null });
  expect(existsSync(path.join(dir, 'sleeper.pid'))).toBe(false);
  expect(alive(sleeper)).toBe(false);
});
