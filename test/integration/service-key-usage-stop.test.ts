/**
 * Usage records survive a graceful stop: calls through account-api → banking (a workspace key →
 * the account API → the banking service as a process of its own, as `npm run banking` runs it),
 * then SIGINT or SIGTERM to the banking service before its periodic usage flush (a minute here):
 * the pair's key shows the calls. Usage is the evidence a rotation relies on. Also when a second
 * SIGINT comes while the service closes (tsx relays a Ctrl-C to its child) and a call is in flight
 * (its keep-alive connection must not hold the close until the deadline).
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-servers.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { configEnv } from '../support/tenant-platform.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PAIR = { caller: 'account-api', target: 'banking' };

let api: TestApi;
let bankingPort: number;
/**
 * Holds the banking port between the tests' banking processes: the API's BANKING_URL is fixed, and
 * another test file's freePort() could otherwise hand the same port to its own banking service,
 * whose usage this test would then count.
 */
let portHolder: Server | undefined;
async function holdBankingPort() {
  const holder = createServer();
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject).listen(bankingPort, '127.0.0.1', () => resolve());
  });
  portHolder = holder;
}
async function releaseBankingPort() {
  const holder = portHolder;
  portHolder = undefined;
  if (holder) await new Promise((resolve) => holder.close(resolve));
}
let token: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  bankingPort = await freePort();
  await holdBankingPort();
  api = await startTestApi({ BANKING_URL: `http://127.0.0.1:${bankingPort}` });
  const a = await adminOfNewWorkspace(api.base, api.pool);
  token = (await createKey(api.base, a.accessToken, { name: 'bank', scopes: ['banking:read'] })).token;
});
afterEach(async () => {
  // the test's banking process has stopped (or is killed here): hold the port again
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null)
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        /* gone already */
      }
  for (let tries = 0; tries < 50 && !portHolder; tries++) await holdBankingPort().catch(() => sleep(100));
});
afterAll(async () => {
  await releaseBankingPort();
  for (const c of children) if (c.exitCode === null) process.kill(-c.pid!, 'SIGKILL');
  await api?.close();
});

async function startBankingProcess(extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
  const env = {
    ...configEnv(api.cfg),
    PATH: process.env.PATH!,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    BANKING_PORT: String(bankingPort),
    // only a stop can write the usage of these calls
    SERVICE_KEY_USAGE_FLUSH_MS: '60000',
    ...extraEnv,
  };
  await releaseBankingPort();
  // through the tsx CLI, as `npm run start:*` runs a service, in a process group of its own (a
  // terminal's Ctrl-C signals the whole group: tsx and the service)
  const service = await startServiceProcess(
    'banking service',
    `${root}node_modules/.bin/tsx`,
    [`${root}services/banking/server.ts`],
    { cwd: root, env, detached: true },
    `http://127.0.0.1:${bankingPort}/healthz`,
  );
  children.push(service.child);
  return service;
}

const currentKey = async () => (await listKeys(api.pool, PAIR)).find((k) => k.state === 'current')!;

it.each(['SIGINT', 'SIGTERM'] as const)(
  'calls through account-api → banking, then %s: the usage records show them',
  async (signal) => {
    const banking = await startBankingProcess();
    const before = await currentKey();
    const startedAt = Date.now();
    for (let i = 0; i < 3; i++) {
      const res = await call(api.base, 'GET', '/api/banking/adapters', { token });
      expect(res.status).toBe(200);
    }
    // the banking service saw account-api's key (its request lines name caller and key id)
    await expect.poll(() => banking.output(), { timeout: 5_000 }).toContain(before.keyId);
    expect((await currentKey()).useCount).toBe(before.useCount);

    const exited = new Promise<number | null>((resolve) => banking.child.once('exit', (code) => resolve(code)));
    process.kill(-banking.child.pid!, signal);
    expect(await exited).toBe(0);

    const after = await currentKey();
    expect(after.keyId).toBe(before.keyId);
    expect(after.useCount - before.useCount).toBeGreaterThanOrEqual(3);
    expect(after.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(startedAt - 1_000);
  },
);

it('a second SIGINT while the service closes (tsx relays a Ctrl-C its child did not report within 30 ms; or Ctrl-C twice): the close finishes and the usage records show every call', async () => {
  // a bank that answers after 1.5 s: the service's close waits for the call in flight
  const slowBank = createServer((_req, res) => setTimeout(() => res.writeHead(503).end(), 1_500));
  const bankPort = await freePort();
  await new Promise<void>((r) => slowBank.listen(bankPort, '127.0.0.1', r));
  try {
    const banking = await startBankingProcess({ BANKING_BANKS: `slow=http://127.0.0.1:${bankPort}` });
    const before = await currentKey();
    for (let i = 0; i < 3; i++)
      expect((await call(api.base, 'GET', '/api/banking/adapters', { token })).status).toBe(200);
    const inFlight = call(api.base, 'POST', '/api/banking/slow/consent', {
      token,
      body: { validUntil: '2027-01-31', frequencyPerDay: 4, recurringIndicator: true },
    });
    await expect
      .poll(() => banking.output().split(before.keyId).length - 1, { timeout: 5_000 })
      .toBeGreaterThanOrEqual(3);
    await sleep(200); // the consent call is at the bank now

    const exited = new Promise<number | null>((resolve) => banking.child.once('exit', (code) => resolve(code)));
    process.kill(-banking.child.pid!, 'SIGINT');
    await sleep(100);
    process.kill(-banking.child.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    await inFlight;

    // at least this service's 4 calls (3 adapters, the consent): other test files' services verify the
    // same pair's key in the shared database and may flush their own uses meanwhile
    const after = await currentKey();
    expect(after.useCount - before.useCount).toBeGreaterThanOrEqual(4);
  } finally {
    await new Promise((r) => slowBank.close(r));
  }
}, 30_000);
