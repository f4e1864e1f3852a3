/**
 * The banking service as its own process (services/banking/server.ts at LOG_LEVEL=debug): through a
 * whole consent flow, reads and a bank refusal, its log never holds the bank's Consent-ID (the
 * credential that reads the accounts) or the caller's service key.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPool, type Pool } from '../../lib/db.js';
import { open } from '../../lib/secret-box.js';
import { parseConfig } from '../../lib/config.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { freePort } from '../../scripts/local-servers.js';
import { startBankStandIn, type BankStandIn } from '../../sandbox/bank/server.js';
import { startNodeService } from '../support/service-process.js';
import { addWorkspace } from '../support/workspace-api.js';

let child: ChildProcess;
/** The service's output so far. */
let output = () => '';
let pool: Pool;
let bank: BankStandIn;
let url: string;

beforeAll(async () => {
  pool = createPool(inject('databaseUrl'), 2);
  bank = await startBankStandIn({ bankId: 'sandbox' });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const service = await startNodeService(
    'banking service',
    'services/banking/server.ts',
    {
      LOG_LEVEL: 'debug',
      DATABASE_URL: inject('databaseUrl'),
      BANKING_PORT: String(port),
      BANKING_BANKS: `sandbox=${bank.url}`,
    },
    `${url}/healthz`,
  );
  child = service.child;
  output = service.output;
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await bank?.close();
  await pool?.end();
});

it("never logs the bank's Consent-ID or the service key", async () => {
  const cfg = parseConfig({});
  const serviceKey = (await new PgSecretStore(pool, cfg.SECRETS_KEY).current('account-api', 'banking')).key;
  const ws = await addWorkspace(pool);
  const headers = { 'x-api-key': serviceKey, 'x-workspace-id': ws.id, 'content-type': 'application/json' };
  const created = await fetch(`${url}/banking/sandbox/consent`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ frequencyPerDay: 3 }),
  });
  expect(created.status).toBe(201);
  const consent = (await created.json()) as { consentId: string; scaRedirect: string };
  const page = await (await fetch(consent.scaRedirect)).text();
  await fetch(new URL(/action="([^"]+)"/.exec(page)![1]!, bank.url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'decision=approve',
  });
  const get = (path: string) =>
    fetch(`${url}${path}`, { headers: { 'x-api-key': serviceKey, 'x-workspace-id': ws.id } });
  expect((await get(`/banking/sandbox/consent/${consent.consentId}`)).status).toBe(200);
  expect((await get('/banking/sandbox/accounts')).status).toBe(200);
  expect((await get('/banking/sandbox/accounts/sandbox-cur-1/transactions?bookingStatus=both')).status).toBe(200);
  expect((await get('/banking/sandbox/accounts/sandbox-cur-1/balance')).status).toBe(200);
  expect((await get('/banking/sandbox/accounts/sandbox-cur-1/balance')).status).toBe(429); // frequencyPerDay 3 used up
  expect((await get('/banking/sandbox/accounts/no-such-account/balance')).status).toBe(429);
  expect(
    (await fetch(`${url}/banking/adapters`, { headers: { 'x-api-key': 'wrong-key-0123456789abcdef' } })).status,
  ).toBe(401);

  const { rows } = await pool.query<{ bank_consent_sealed: string }>(
    'SELECT bank_consent_sealed FROM banking_consents WHERE id = $1',
    [consent.consentId],
  );
  const bankConsentId = open(rows[0]!.bank_consent_sealed, cfg.SECRETS_KEY);
  await new Promise((r) => setTimeout(r, 200)); // let the last lines arrive
  expect(output()).toContain(consent.consentId); // the workspace's consent id is logged; the bank's is not
  expect(output()).not.toContain(bankConsentId);
  expect(output()).not.toContain(serviceKey);
});
