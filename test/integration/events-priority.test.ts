/**
 * The events service run as its own process yields the CPU to the delivery path: it lowers its
 * priority to nice EVENTS_NICE (5 by default), never raising it, and still takes events.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterEach, expect, it } from 'vitest';
import { startEventsProcess } from '../support/service-process.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGTERM');
});

/** The events service as a process with `env` added, stopped after the test. */
async function eventsProcess(env: Record<string, string> = {}) {
  const { child } = await startEventsProcess(env);
  children.push(child);
  return child;
}

/** The nice value of a process (field 19 of /proc/<pid>/stat). */
const niceOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
};

it('runs at nice 5 by default, at EVENTS_NICE when given, and never above its starting priority', async () => {
  const started = getPriority();
  const byDefault = await eventsProcess();
  expect(niceOf(byDefault.pid!)).toBe(Math.max(started, 5));
  const asStarted = await eventsProcess({ EVENTS_NICE: '0' });
  expect(niceOf(asStarted.pid!)).toBe(started);
}, 90_000);
