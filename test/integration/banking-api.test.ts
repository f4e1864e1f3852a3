/**
 * Banking end to end over real HTTP: a workspace key → the account API → the banking service (with
 * the account API's service key from the secret store) → the bank stand-in (NextGenPSD2), with SCA
 * completed by HTTP as a PSU's browser does, the bank's limits, and banks and services going down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { startBanking } from '../../services/banking/server.js';
import { startBankStandIn, type BankStandIn } from '../../sandbox/bank/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { open } from '../../lib/secret-box.js';
import type { TestApi } from '../support/api.js';
import { startApiWithBanking } from '../support/banking.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let api: TestApi;
let banking: Awaited<ReturnType<typeof startBanking>>;
let bank: BankStandIn;
let flaky: BankStandIn;
/** Days the bank's clock is ahead of the real one. */
let bankDaysAhead = 0;
let base: string;
let keyA: string;
let keyB: string;
let dashboardOnly: string;

const day = (offset = 0) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  bank = await startBankStandIn({ bankId: 'sandbox', clock: () => new Date(Date.now() + bankDaysAhead * 86_400_000) });
  flaky = await startBankStandIn({ bankId: 'flaky-bank', name: 'Flaky Bank', port: await freePort() });
  ({ api, banking } = await startApiWithBanking({
    // closed-bank: a port nothing listens on
    banks: async () => `sandbox=${bank.url},flaky-bank=${flaky.url},closed-bank=http://127.0.0.1:${await freePort()}`,
    banking: { BANKING_BANK_TIMEOUT_MS: 3_000 },
  }));
  base = api.base;
  const a = await adminOfNewWorkspace(base, api.pool);
  keyA = (await createKey(base, a.accessToken, { name: 'bank', scopes: ['banking:read'] })).token;
  dashboardOnly = (await createKey(base, a.accessToken, { name: 'dash', scopes: ['dashboard:read'] })).token;
  const b = await adminOfNewWorkspace(base, api.pool);
  keyB = (await createKey(base, b.accessToken, { name: 'bank', scopes: ['banking:read'] })).token;
});

afterAll(async () => {
  await banking?.close();
  await api?.close();
  await bank?.close();
  await flaky?.close();
});

/** What a PSU does in the browser: open the bank's SCA page and approve (or reject). */
async function completeSca(scaRedirect: string, decision: 'approve' | 'reject' = 'approve') {
  const page = await fetch(scaRedirect);
  expect(page.status).toBe(200);
  const html = await page.text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  expect(action).toBeDefined();
  const res = await fetch(new URL(action!, scaRedirect), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ tan: '123456', decision }),
    redirect: 'manual',
  });
  return res;
}

async function validConsent(token: string, body: Record<string, unknown> = {}, bankId = 'sandbox') {
  const created = await call(base, 'POST', `/api/banking/${bankId}/consent`, { token, body });
  expect(created.status).toBe(201);
  const sca = await completeSca(created.body.scaRedirect);
  expect(sca.status).toBe(200);
  return created.body.consentId as string;
}

const routes = (consentId: string) =>
  [
    ['GET', '/api/banking/adapters'],
    ['POST', '/api/banking/sandbox/consent'],
    ['GET', `/api/banking/sandbox/consent/${consentId}`],
    ['GET', '/api/banking/sandbox/accounts'],
    ['GET', '/api/banking/sandbox/accounts/sandbox-cur-1/transactions'],
    ['GET', '/api/banking/sandbox/accounts/sandbox-cur-1/balance'],
  ] as const;

describe('access to /api/banking/*', () => {
  it('every route: no key → 401, a key without banking:read → 403 naming the scope', async () => {
    for (const [method, path] of routes('00000000-0000-4000-8000-000000000000')) {
      const body = method === 'POST' ? {} : undefined;
      const none = await call(base, method, path, { body });
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.headers.get('content-type')).toContain('application/problem+json');
      const wrong = await call(base, method, path, { token: dashboardOnly, body });
      expect(wrong.status, `${method} ${path}`).toBe(403);
      expect(wrong.body.requiredScope).toBe('banking:read');
    }
  });

  it("every route: another workspace's key never reaches this workspace's consent", async () => {
    const consentId = await validConsent(keyA);
    expect((await call(base, 'GET', `/api/banking/sandbox/consent/${consentId}`, { token: keyA })).status).toBe(200);
    const other = await call(base, 'GET', `/api/banking/sandbox/consent/${consentId}`, { token: keyB });
    expect(other.status).toBe(404);
    for (const path of [
      '/api/banking/sandbox/accounts',
      '/api/banking/sandbox/accounts/sandbox-cur-1/transactions',
      '/api/banking/sandbox/accounts/sandbox-cur-1/balance',
    ]) {
      const res = await call(base, 'GET', `${path}?consentId=${consentId}`, { token: keyB });
      expect(res.status, path).toBe(404);
      // without a consent id, B reads with its own consents only: it has none
      const own = await call(base, 'GET', path, { token: keyB });
      expect(own.status, path).toBe(409);
      expect(own.body.detail).toContain('no valid consent');
    }
  });

  it('lists the adapters', async () => {
    const res = await call(base, 'GET', '/api/banking/adapters', { token: keyA });
    expect(res.status).toBe(200);
    expect(res.body.adapters.map((a: { id: string }) => a.id)).toEqual(['sandbox', 'flaky-bank', 'closed-bank']);
    expect(res.body.adapters[0].protocol).toBe('berlin-group-nextgenpsd2');
  });
});

describe('consent flow with SCA to transactions', () => {
  it('received → SCA completed by HTTP → valid → accounts, transactions, balances', async () => {
    const redirectUrl = 'https://app.example.test/banking/done';
    const created = await call(base, 'POST', '/api/banking/sandbox/consent', {
      token: keyA,
      body: {
        access: { allPsd2: 'allAccounts' },
        recurringIndicator: true,
        validUntil: day(30),
        frequencyPerDay: 20,
        redirectUrl,
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      bankId: 'sandbox',
      status: 'received',
      validUntil: day(30),
      frequencyPerDay: 20,
      recurringIndicator: true,
    });
    expect(created.body.scaRedirect).toMatch(new RegExp(`^${bank.url}/sca/`));
    const consentId = created.body.consentId as string;

    // before SCA the bank refuses the data
    const early = await call(base, 'GET', `/api/banking/sandbox/accounts?consentId=${consentId}`, { token: keyA });
    expect(early.status).toBe(409);
    expect(early.body.bankCode).toBe('CONSENT_INVALID');

    const sca = await completeSca(created.body.scaRedirect);
    expect(sca.status).toBe(303);
    expect(sca.headers.get('location')).toBe(redirectUrl);
    const status = await call(base, 'GET', `/api/banking/sandbox/consent/${consentId}`, { token: keyA });
    expect(status.body).toMatchObject({ status: 'valid', scaRedirect: null });

    const accounts = await call(base, 'GET', `/api/banking/sandbox/accounts?consentId=${consentId}`, { token: keyA });
    expect(accounts.status).toBe(200);
    expect(accounts.body.accounts.map((a: { resourceId: string }) => a.resourceId)).toEqual([
      'sandbox-cur-1',
      'sandbox-sav-1',
    ]);
    expect(accounts.body.accounts[0].iban).toMatch(/^DE\d{20}$/);

    const path = `/api/banking/sandbox/accounts/sandbox-cur-1/transactions?consentId=${consentId}&bookingStatus=booked&dateFrom=${day(-40)}&dateTo=${day(-10)}`;
    const booked = await call(base, 'GET', path, { token: keyA });
    expect(booked.status).toBe(200);
    const lines = booked.body.transactions.booked as {
      transactionId: string;
      bookingDate: string;
      transactionAmount: { currency: string; amount: string };
    }[];
    expect(lines.length).toBeGreaterThan(5);
    expect(booked.body.transactions.pending).toBeUndefined();
    for (const t of lines) {
      expect(t.bookingDate >= day(-40) && t.bookingDate <= day(-10)).toBe(true);
      expect(t.transactionAmount.currency).toBe('EUR');
      expect(t.transactionAmount.amount).toMatch(/^-?\d+\.\d{2}$/);
    }
    // repeatable: the same question, the same answer
    expect((await call(base, 'GET', path, { token: keyA })).body).toEqual(booked.body);

    const pending = await call(
      base,
      'GET',
      `/api/banking/sandbox/accounts/sandbox-cur-1/transactions?consentId=${consentId}&bookingStatus=pending`,
      { token: keyA },
    );
    expect(pending.body.transactions.booked).toBeUndefined();
    for (const t of pending.body.transactions.pending) expect(t.bookingDate).toBeUndefined();

    const balance = await call(base, 'GET', `/api/banking/sandbox/accounts/sandbox-cur-1/balance`, { token: keyA });
    expect(balance.status).toBe(200);
    expect(balance.body.balances.map((b: { balanceType: string }) => b.balanceType)).toEqual([
      'closingBooked',
      'expected',
      'interimAvailable',
    ]);
    expect(balance.body.balances[0].balanceAmount.amount).toMatch(/^-?\d+\.\d{2}$/);
  });

  it('a rejected SCA leaves the consent rejected and the data closed', async () => {
    const created = await call(base, 'POST', '/api/banking/sandbox/consent', { token: keyA, body: {} });
    expect((await completeSca(created.body.scaRedirect, 'reject')).status).toBe(200);
    expect(
      (await call(base, 'GET', `/api/banking/sandbox/consent/${created.body.consentId}`, { token: keyA })).body.status,
    ).toBe('rejected');
    expect(
      (await call(base, 'GET', `/api/banking/sandbox/accounts?consentId=${created.body.consentId}`, { token: keyA }))
        .status,
    ).toBe(409);
  });

  it('a consent the PSU withdraws at the bank shows revokedByPsu and reads nothing more', async () => {
    const created = await call(base, 'POST', '/api/banking/sandbox/consent', { token: keyA, body: {} });
    await completeSca(created.body.scaRedirect);
    const path = `/api/banking/sandbox/accounts?consentId=${created.body.consentId}`;
    expect((await call(base, 'GET', path, { token: keyA })).status).toBe(200);
    expect((await fetch(`${created.body.scaRedirect}/revoke`, { method: 'POST' })).status).toBe(200);
    expect(
      (await call(base, 'GET', `/api/banking/sandbox/consent/${created.body.consentId}`, { token: keyA })).body.status,
    ).toBe('revokedByPsu');
    const after = await call(base, 'GET', path, { token: keyA });
    expect(after.status).toBe(409);
    expect(after.body.bankCode).toBe('CONSENT_INVALID');
  });

  it('refuses bad consent requests with a 400 problem, and an unknown bank with 404', async () => {
    const past = await call(base, 'POST', '/api/banking/sandbox/consent', {
      token: keyA,
      body: { validUntil: day(-1) },
    });
    expect(past.status).toBe(400);
    const bad = await call(base, 'POST', '/api/banking/sandbox/consent', { token: keyA, body: { frequencyPerDay: 0 } });
    expect(bad.status).toBe(400);
    const oneOff = await call(base, 'POST', '/api/banking/sandbox/consent', {
      token: keyA,
      body: { recurringIndicator: false, frequencyPerDay: 4 },
    });
    expect(oneOff.status).toBe(400);
    const unknown = await call(base, 'GET', '/api/banking/no-such-bank/accounts', { token: keyA });
    expect(unknown.status).toBe(404);
  });

  it("keeps the bank's Consent-ID sealed: not in the table in clear, never in an answer", async () => {
    const created = await call(base, 'POST', '/api/banking/sandbox/consent', { token: keyA, body: {} });
    const { rows } = await api.pool.query<{ bank_consent_sealed: string }>(
      'SELECT bank_consent_sealed FROM banking_consents WHERE id = $1',
      [created.body.consentId],
    );
    expect(rows[0]!.bank_consent_sealed).toMatch(/^v1\./);
    const bankConsentId = open(rows[0]!.bank_consent_sealed, api.cfg.SECRETS_KEY);
    expect(JSON.stringify(created.body)).not.toContain(bankConsentId);
    expect(created.body.scaRedirect).not.toContain(bankConsentId);
    const read = await call(base, 'GET', `/api/banking/sandbox/consent/${created.body.consentId}`, { token: keyA });
    expect(JSON.stringify(read.body)).not.toContain(bankConsentId);
  });
});

describe("the bank's consent limits", () => {
  it('frequencyPerDay: the access after the last one of the day → 429 ACCESS_EXCEEDED; the next day it reads again', async () => {
    const consentId = await validConsent(keyA, { frequencyPerDay: 2 });
    const path = `/api/banking/sandbox/accounts/sandbox-cur-1/balance?consentId=${consentId}`;
    expect((await call(base, 'GET', path, { token: keyA })).status).toBe(200);
    expect((await call(base, 'GET', path, { token: keyA })).status).toBe(200);
    const third = await call(base, 'GET', path, { token: keyA });
    expect(third.status).toBe(429);
    expect(third.headers.get('content-type')).toContain('application/problem+json');
    expect(third.body).toMatchObject({ bankId: 'sandbox', bankCode: 'ACCESS_EXCEEDED' });
    expect(third.body.detail).toContain('Sandbox Bank');
    bankDaysAhead = 1;
    try {
      expect((await call(base, 'GET', path, { token: keyA })).status).toBe(200);
    } finally {
      bankDaysAhead = 0;
    }
  });

  it('validUntil passed: the bank answers CONSENT_EXPIRED and the consent shows expired', async () => {
    const consentId = await validConsent(keyA, { validUntil: day(1) });
    bankDaysAhead = 3;
    try {
      const res = await call(base, 'GET', `/api/banking/sandbox/accounts?consentId=${consentId}`, { token: keyA });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ bankId: 'sandbox', bankCode: 'CONSENT_EXPIRED' });
      const { rows } = await api.pool.query<{ status: string }>('SELECT status FROM banking_consents WHERE id = $1', [
        consentId,
      ]);
      expect(rows[0]!.status).toBe('expired');
      expect((await call(base, 'GET', `/api/banking/sandbox/consent/${consentId}`, { token: keyA })).body.status).toBe(
        'expired',
      );
    } finally {
      bankDaysAhead = 0;
    }
  });
});

describe('the bank stand-in speaks NextGenPSD2', () => {
  const headers = () => ({
    'x-request-id': crypto.randomUUID(),
    'psu-ip-address': '192.0.2.1',
    'content-type': 'application/json',
  });

  it('unknown consent → CONSENT_UNKNOWN; expired → 401 CONSENT_EXPIRED, in tppMessages', async () => {
    const unknown = await fetch(`${bank.url}/v1/consents/${crypto.randomUUID()}`, { headers: headers() });
    expect(unknown.status).toBe(403);
    expect(await unknown.json()).toEqual({
      tppMessages: [{ category: 'ERROR', code: 'CONSENT_UNKNOWN', text: expect.any(String) }],
    });
    const inHeader = await fetch(`${bank.url}/v1/accounts`, { headers: { ...headers(), 'consent-id': 'nope' } });
    expect(inHeader.status).toBe(400);
    expect((await inHeader.json()).tppMessages[0].code).toBe('CONSENT_UNKNOWN');

    const created = await fetch(`${bank.url}/v1/consents`, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({
        access: { allPsd2: 'allAccounts' },
        recurringIndicator: true,
        validUntil: day(0),
        frequencyPerDay: 4,
        combinedServiceIndicator: false,
      }),
    });
    expect(created.status).toBe(201);
    const consent = (await created.json()) as {
      consentId: string;
      consentStatus: string;
      _links: { scaRedirect: { href: string } };
    };
    expect(consent.consentStatus).toBe('received');
    await completeSca(consent._links.scaRedirect.href);
    bankDaysAhead = 1;
    try {
      const expired = await fetch(`${bank.url}/v1/accounts`, {
        headers: { 'x-request-id': crypto.randomUUID(), 'consent-id': consent.consentId },
      });
      expect(expired.status).toBe(401);
      expect((await expired.json()).tppMessages[0].code).toBe('CONSENT_EXPIRED');
      const status = await fetch(`${bank.url}/v1/consents/${consent.consentId}/status`, { headers: headers() });
      expect(await status.json()).toEqual({ consentStatus: 'expired' });
    } finally {
      bankDaysAhead = 0;
    }
  });

  it('refuses a request without X-Request-ID with FORMAT_ERROR', async () => {
    const res = await fetch(`${bank.url}/v1/accounts`, { headers: { 'consent-id': 'x' } });
    expect(res.status).toBe(400);
    expect((await res.json()).tppMessages[0].code).toBe('FORMAT_ERROR');
  });
});

describe('outages', () => {
  it('a bank that cannot be reached → 503 naming the bank, not 500', async () => {
    const res = await call(base, 'POST', '/api/banking/closed-bank/consent', { token: keyA, body: {} });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.bankId).toBe('closed-bank');
    expect(res.body.detail).toContain('Closed Bank');
  });

  it('a bank going down after its consent → 503 for the data, naming the bank', async () => {
    const consentId = await validConsent(keyA, {}, 'flaky-bank');
    expect(
      (await call(base, 'GET', `/api/banking/flaky-bank/accounts?consentId=${consentId}`, { token: keyA })).status,
    ).toBe(200);
    await flaky.close();
    const res = await call(base, 'GET', `/api/banking/flaky-bank/accounts?consentId=${consentId}`, { token: keyA });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ bankId: 'flaky-bank' });
    expect(res.body.detail).toContain('Flaky Bank');
  });

  it('the banking service down → 503 problem from the account API', async () => {
    await banking.close();
    const res = await call(base, 'GET', '/api/banking/adapters', { token: keyA });
    expect(res.status).toBe(503);
    expect(res.body.detail).toContain('banking service');
  });
});
