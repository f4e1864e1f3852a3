/**
 * The bank stand-in (sandbox/bank) held to the Berlin Group's published NextGenPSD2 XS2A 1.3.11
 * OpenAPI document (fetched by scripts/bootstrap.sh from Maven Central, see
 * test/support/nextgenpsd2-openapi.ts). Every request goes to the real stand-in over HTTP as a TPP
 * sends it; each request must be one the document allows (or, where a test sends a bad one on
 * purpose, one the document refuses too), and each answer must be one the document declares for the
 * operation: its status, its content type, the headers it requires (X-Request-ID) and its body. On
 * top, the test checks what the bank does: statuses of the consent, what a consent grants, booked
 * and pending transactions in a period, and the NextGenPSD2 message codes of its refusals (this copy
 * of the document types the codes as plain strings). The banking service's adapter is held to the
 * document too, through a proxy that checks each of its exchanges with the stand-in.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../lib/errors.js';
import { NextGenPsd2Adapter } from '../../domain/banking/nextgenpsd2.js';
import { startBankStandIn, type BankStandIn } from '../../sandbox/bank/server.js';
import { nextGenPsd2Contract, type NextGenPsd2Contract } from '../support/nextgenpsd2-openapi.js';

let bank: BankStandIn;
let contract: NextGenPsd2Contract;
/** Days the bank's clock is ahead of the real one. */
let bankDaysAhead = 0;
/** operationId → statuses seen, to show that every operation the stand-in offers was exercised. */
const seen = new Map<string, Set<number>>();

const day = (offset = 0) => new Date(Date.now() + (bankDaysAhead + offset) * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  contract = await nextGenPsd2Contract();
  bank = await startBankStandIn({
    bankId: 'contract-bank',
    clock: () => new Date(Date.now() + bankDaysAhead * 86_400_000),
  });
});

afterAll(async () => {
  await bank?.close();
});

interface Sent {
  headers?: Record<string, string>;
  body?: unknown;
  /** the request breaks the document on purpose: the document must refuse it too */
  invalid?: boolean;
  /** leave out X-Request-ID */
  noRequestId?: boolean;
}

interface Answer {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  operationId: string;
}

/** One HTTP exchange with the stand-in, both directions checked against the document. */
async function exchange(method: string, url: string, headers: Record<string, string>, body?: unknown) {
  const { operation, errors: requestErrors } = contract.checkRequest({ method, url, headers, body });
  const res = await fetch(new URL(url, bank.url), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  const responseErrors = operation
    ? contract.checkResponse(operation, { status: res.status, headers: res.headers, body: parsed })
    : [];
  if (operation) seen.set(operation.operationId!, (seen.get(operation.operationId!) ?? new Set()).add(res.status));
  return { operation, requestErrors, responseErrors, res, text, body: parsed };
}

/** An XS2A request as a TPP sends it; fails the test where the exchange breaks the document. */
async function xs2a(method: string, url: string, sent: Sent = {}): Promise<Answer> {
  const requestId = randomUUID();
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(sent.noRequestId ? {} : { 'x-request-id': requestId }),
    ...(sent.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...sent.headers,
  };
  const { operation, requestErrors, responseErrors, res, text, body } = await exchange(method, url, headers, sent.body);
  expect(operation, `${method} ${url}`).toBeDefined();
  if (sent.invalid) expect(requestErrors, `the document allows ${method} ${url}, sent as invalid`).not.toEqual([]);
  else expect(requestErrors, `${method} ${url}`).toEqual([]);
  expect(responseErrors, `${method} ${url} → ${res.status} ${text.slice(0, 300)}`).toEqual([]);
  if (!sent.noRequestId) expect(res.headers.get('x-request-id')).toBe(requestId);
  return { status: res.status, headers: res.headers, body, operationId: operation.operationId! };
}

const tpp = {
  'psu-ip-address': '192.0.2.10',
  'tpp-redirect-preferred': 'true',
  'tpp-redirect-uri': 'https://tpp.example/back',
};

function consentBody(over: Record<string, unknown> = {}) {
  return {
    access: { allPsd2: 'allAccounts' },
    recurringIndicator: true,
    validUntil: day(30),
    frequencyPerDay: 4,
    combinedServiceIndicator: false,
    ...over,
  };
}

/** The PSU at the bank's SCA page (the bank's own website, outside XS2A): approve or reject. */
async function sca(scaRedirect: string, decision: 'approve' | 'reject') {
  const page = await fetch(scaRedirect);
  expect(page.status).toBe(200);
  const action = /<form method="post" action="([^"]+)"/.exec(await page.text())?.[1];
  const res = await fetch(new URL(action!, scaRedirect), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ tan: '123456', decision }),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe(tpp['tpp-redirect-uri']);
}

async function createConsent(over: Record<string, unknown> = {}) {
  const created = await xs2a('POST', '/v1/consents', { headers: tpp, body: consentBody(over) });
  expect(created.status).toBe(201);
  return created;
}

async function validConsent(over: Record<string, unknown> = {}) {
  const created = await createConsent(over);
  await sca(created.body._links.scaRedirect.href, 'approve');
  return created.body.consentId as string;
}

const tppMessage = (a: Answer) => a.body.tppMessages[0] as { category: string; code: string; text?: string };

describe('consents', () => {
  it('a consent is created, authorised by the PSU at the bank, read, and terminated by the TPP, every step as the document has it', async () => {
    const created = await createConsent();
    expect(created.body.consentStatus).toBe('received');
    expect(created.headers.get('aspsp-sca-approach')).toBe('REDIRECT');
    const consentId = created.body.consentId as string;
    expect(created.headers.get('location')).toBe(`/v1/consents/${consentId}`);
    expect(created.body._links.self.href).toBe(`/v1/consents/${consentId}`);

    const before = await xs2a('GET', `/v1/consents/${consentId}`);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({
      consentStatus: 'received',
      access: { allPsd2: 'allAccounts' },
      recurringIndicator: true,
      validUntil: day(30),
      frequencyPerDay: 4,
      lastActionDate: day(),
    });

    const authorisations = await xs2a('GET', `/v1/consents/${consentId}/authorisations`);
    expect(authorisations.status).toBe(200);
    expect(authorisations.body.authorisationIds).toHaveLength(1);
    const scaStatusUrl = `/v1/consents/${consentId}/authorisations/${authorisations.body.authorisationIds[0]}`;
    expect(created.body._links.scaStatus.href).toBe(scaStatusUrl);
    expect((await xs2a('GET', scaStatusUrl)).body.scaStatus).toBe('received');

    await sca(created.body._links.scaRedirect.href, 'approve');
    expect((await xs2a('GET', `/v1/consents/${consentId}/status`)).body.consentStatus).toBe('valid');
    expect((await xs2a('GET', scaStatusUrl)).body.scaStatus).toBe('finalised');

    const deleted = await xs2a('DELETE', `/v1/consents/${consentId}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await xs2a('GET', `/v1/consents/${consentId}/status`)).body.consentStatus).toBe('terminatedByTpp');
    const afterwards = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': consentId } });
    expect(afterwards.status).toBe(401);
    expect(tppMessage(afterwards)).toMatchObject({ category: 'ERROR', code: 'CONSENT_INVALID' });
  });

  it('a consent the PSU rejects is rejected, its authorisation failed, and it gives no access', async () => {
    const created = await createConsent();
    const consentId = created.body.consentId as string;
    await sca(created.body._links.scaRedirect.href, 'reject');
    expect((await xs2a('GET', `/v1/consents/${consentId}/status`)).body.consentStatus).toBe('rejected');
    expect((await xs2a('GET', created.body._links.scaStatus.href)).body.scaStatus).toBe('failed');
    const refused = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': consentId } });
    expect(refused.status).toBe(401);
    expect(tppMessage(refused).code).toBe('CONSENT_INVALID');
  });

  it('a consent not authorised yet gives no access (401 CONSENT_INVALID)', async () => {
    const created = await createConsent();
    const refused = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': created.body.consentId } });
    expect(refused.status).toBe(401);
    expect(tppMessage(refused).code).toBe('CONSENT_INVALID');
  });

  it('bad consent requests are refused with 400 FORMAT_ERROR or PERIOD_INVALID, and nothing is created', async () => {
    const noRequestId = await xs2a('POST', '/v1/consents', {
      headers: tpp,
      body: consentBody(),
      noRequestId: true,
      invalid: true,
    });
    expect(noRequestId.status).toBe(400);
    expect(tppMessage(noRequestId)).toMatchObject({ category: 'ERROR', code: 'FORMAT_ERROR' });

    const { 'psu-ip-address': _ip, ...withoutIp } = tpp;
    const noIp = await xs2a('POST', '/v1/consents', { headers: withoutIp, body: consentBody(), invalid: true });
    expect(noIp.status).toBe(400);
    expect(tppMessage(noIp).code).toBe('FORMAT_ERROR');

    const badDate = await xs2a('POST', '/v1/consents', {
      headers: tpp,
      body: consentBody({ validUntil: 'next week' }),
      invalid: true,
    });
    expect(badDate.status).toBe(400);
    expect(tppMessage(badDate).code).toBe('FORMAT_ERROR');

    const { frequencyPerDay: _f, ...noFrequency } = consentBody();
    const missing = await xs2a('POST', '/v1/consents', { headers: tpp, body: noFrequency, invalid: true });
    expect(missing.status).toBe(400);
    expect(tppMessage(missing).code).toBe('FORMAT_ERROR');

    const past = await xs2a('POST', '/v1/consents', { headers: tpp, body: consentBody({ validUntil: day(-1) }) });
    expect(past.status).toBe(400);
    expect(tppMessage(past).code).toBe('PERIOD_INVALID');
  });

  it('an unknown consent in the path is 403 CONSENT_UNKNOWN, in the Consent-ID header 400 CONSENT_UNKNOWN', async () => {
    const unknown = randomUUID();
    for (const url of [
      `/v1/consents/${unknown}`,
      `/v1/consents/${unknown}/status`,
      `/v1/consents/${unknown}/authorisations`,
    ]) {
      const answer = await xs2a('GET', url);
      expect(answer.status).toBe(403);
      expect(tppMessage(answer).code).toBe('CONSENT_UNKNOWN');
    }
    const deleted = await xs2a('DELETE', `/v1/consents/${unknown}`);
    expect(deleted.status).toBe(403);
    expect(tppMessage(deleted).code).toBe('CONSENT_UNKNOWN');
    const header = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': unknown } });
    expect(header.status).toBe(400);
    expect(tppMessage(header).code).toBe('CONSENT_UNKNOWN');
  });
});

describe('accounts, balances and transactions', () => {
  let consentId: string;
  let accountId: string;

  beforeAll(async () => {
    consentId = await validConsent({ frequencyPerDay: 100 });
  });

  const read = (url: string, sent: Sent = {}) =>
    xs2a('GET', url, { ...sent, headers: { 'consent-id': consentId, ...sent.headers } });

  it('lists the accounts with links to their balances and transactions, and reads one account', async () => {
    const list = await read('/v1/accounts');
    expect(list.status).toBe(200);
    expect(list.body.accounts).toHaveLength(2);
    const account = list.body.accounts[0];
    expect(account).toMatchObject({ currency: 'EUR', cashAccountType: 'CACC', status: 'enabled' });
    accountId = account.resourceId;
    expect(account._links.balances.href).toBe(`/v1/accounts/${accountId}/balances`);

    const details = await read(`/v1/accounts/${accountId}`);
    expect(details.status).toBe(200);
    expect(details.body.account).toMatchObject({ resourceId: accountId, iban: account.iban, currency: 'EUR' });
  });

  it('reads the balances of an account', async () => {
    const answer = await read(`/v1/accounts/${accountId}/balances`);
    expect(answer.status).toBe(200);
    expect(answer.body.balances.map((b: { balanceType: string }) => b.balanceType)).toEqual([
      'closingBooked',
      'expected',
      'interimAvailable',
    ]);
  });

  it('reads booked, pending and both kinds of transactions in a period', async () => {
    const from = day(-20);
    const to = day();
    const booked = await read(
      `/v1/accounts/${accountId}/transactions?bookingStatus=booked&dateFrom=${from}&dateTo=${to}`,
    );
    expect(booked.status).toBe(200);
    expect(booked.body.transactions.pending).toBeUndefined();
    expect(booked.body.transactions.booked.length).toBeGreaterThan(0);
    for (const t of booked.body.transactions.booked)
      expect(t.bookingDate >= from && t.bookingDate <= day(-2)).toBe(true);

    const pending = await read(
      `/v1/accounts/${accountId}/transactions?bookingStatus=pending&dateFrom=${from}&dateTo=${to}`,
    );
    expect(pending.status).toBe(200);
    expect(pending.body.transactions.booked).toBeUndefined();
    for (const t of pending.body.transactions.pending) expect(t.bookingDate).toBeUndefined();

    const both = await read(`/v1/accounts/${accountId}/transactions?bookingStatus=both&dateFrom=${from}&dateTo=${to}`);
    expect(both.body.transactions.booked).toEqual(booked.body.transactions.booked);
    expect(both.body.transactions.pending).toEqual(pending.body.transactions.pending);

    const oneDay = await read(
      `/v1/accounts/${accountId}/transactions?bookingStatus=booked&dateFrom=${day(-10)}&dateTo=${day(-10)}`,
    );
    expect(oneDay.body.transactions.booked).toEqual(
      booked.body.transactions.booked.filter((t: { bookingDate: string }) => t.bookingDate === day(-10)),
    );

    // without dateTo the period ends today
    const open = await read(`/v1/accounts/${accountId}/transactions?bookingStatus=both&dateFrom=${from}`);
    expect(open.body.transactions).toEqual(both.body.transactions);
  });

  it('refuses bad account requests with the codes of the document', async () => {
    const noStatus = await read(`/v1/accounts/${accountId}/transactions?bookingStatus=sometimes&dateFrom=${day(-5)}`, {
      invalid: true,
    });
    expect(noStatus.status).toBe(400);
    expect(tppMessage(noStatus).code).toBe('PARAMETER_NOT_SUPPORTED');

    const noFrom = await read(`/v1/accounts/${accountId}/transactions?bookingStatus=booked`);
    expect(noFrom.status).toBe(400);
    expect(tppMessage(noFrom).code).toBe('FORMAT_ERROR');

    const badDate = await read(`/v1/accounts/${accountId}/transactions?bookingStatus=booked&dateFrom=yesterday`, {
      invalid: true,
    });
    expect(badDate.status).toBe(400);
    expect(tppMessage(badDate).code).toBe('FORMAT_ERROR');

    const reversed = await read(
      `/v1/accounts/${accountId}/transactions?bookingStatus=booked&dateFrom=${day(-1)}&dateTo=${day(-5)}`,
    );
    expect(reversed.status).toBe(400);
    expect(tppMessage(reversed).code).toBe('PERIOD_INVALID');

    const noRequestId = await read('/v1/accounts', { noRequestId: true, invalid: true });
    expect(noRequestId.status).toBe(400);
    expect(tppMessage(noRequestId).code).toBe('FORMAT_ERROR');

    const noConsent = await xs2a('GET', '/v1/accounts', { invalid: true });
    expect(noConsent.status).toBe(400);
    expect(tppMessage(noConsent).code).toBe('FORMAT_ERROR');

    for (const url of [
      '/v1/accounts/nope',
      '/v1/accounts/nope/balances',
      `/v1/accounts/nope/transactions?bookingStatus=booked&dateFrom=${day(-5)}`,
    ]) {
      const unknown = await read(url);
      expect(unknown.status).toBe(404);
      expect(tppMessage(unknown).code).toBe('RESOURCE_UNKNOWN');
    }
  });
});

describe("the bank's limits", () => {
  it('more unattended reads in a day than frequencyPerDay are 429 ACCESS_EXCEEDED; reads with the PSU present are not counted', async () => {
    const consentId = await validConsent({ frequencyPerDay: 2 });
    const headers = { 'consent-id': consentId };
    expect((await xs2a('GET', '/v1/accounts', { headers })).status).toBe(200);
    expect((await xs2a('GET', '/v1/accounts', { headers })).status).toBe(200);
    const third = await xs2a('GET', '/v1/accounts', { headers });
    expect(third.status).toBe(429);
    expect(tppMessage(third)).toMatchObject({ category: 'ERROR', code: 'ACCESS_EXCEEDED' });
    expect(
      (await xs2a('GET', '/v1/accounts', { headers: { ...headers, 'psu-ip-address': '192.0.2.10' } })).status,
    ).toBe(200);
  });

  it('a consent past its validUntil is expired: 401 CONSENT_EXPIRED', async () => {
    const consentId = await validConsent({ validUntil: day(3) });
    bankDaysAhead = 5;
    try {
      const refused = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': consentId } });
      expect(refused.status).toBe(401);
      expect(tppMessage(refused).code).toBe('CONSENT_EXPIRED');
      expect((await xs2a('GET', `/v1/consents/${consentId}/status`)).body.consentStatus).toBe('expired');
    } finally {
      bankDaysAhead = 0;
    }
  });

  it('a consent the PSU revoked at the bank is revokedByPsu and gives no access', async () => {
    const created = await createConsent();
    const consentId = created.body.consentId as string;
    const scaPage = created.body._links.scaRedirect.href as string;
    await sca(scaPage, 'approve');
    expect((await fetch(`${scaPage}/revoke`, { method: 'POST' })).status).toBe(200);
    expect((await xs2a('GET', `/v1/consents/${consentId}`)).body.consentStatus).toBe('revokedByPsu');
    const refused = await xs2a('GET', '/v1/accounts', { headers: { 'consent-id': consentId } });
    expect(refused.status).toBe(401);
    expect(tppMessage(refused).code).toBe('CONSENT_INVALID');
  });
});

describe("the banking service's adapter (domain/banking/nextgenpsd2.ts)", () => {
  let proxy: Server;
  /** what broke the document in the exchanges the adapter made, through the proxy */
  const broken: string[] = [];
  let adapter: NextGenPsd2Adapter;

  beforeAll(async () => {
    // between the adapter and the bank: a proxy that checks every exchange against the document
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(
            ([k]) => !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k),
          ),
        ) as Record<string, string>;
        const text = Buffer.concat(chunks).toString();
        exchange(req.method!, req.url!, headers, text ? (JSON.parse(text) as unknown) : undefined).then(
          (x) => {
            broken.push(...x.requestErrors, ...x.responseErrors);
            const out: Record<string, string> = {};
            for (const name of ['content-type', 'x-request-id', 'location', 'aspsp-sca-approach'])
              if (x.res.headers.has(name)) out[name] = x.res.headers.get(name)!;
            res.writeHead(x.res.status, out).end(x.text);
          },
          (err: Error) => res.writeHead(502).end(err.message),
        );
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    adapter = new NextGenPsd2Adapter(
      'contract-bank',
      'Contract Bank',
      `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      5_000,
    );
  });

  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
  });

  it('sends only requests the document allows, and reads the answers', async () => {
    const created = await adapter.createConsent(
      { access: { allPsd2: 'allAccounts' }, recurringIndicator: true, validUntil: day(30), frequencyPerDay: 3 },
      { ipAddress: '192.0.2.10', redirectUrl: tpp['tpp-redirect-uri'] },
    );
    expect(created.status).toBe('received');
    await sca(created.scaRedirect!, 'approve');
    expect(await adapter.consentStatus(created.bankConsentId)).toEqual({ status: 'valid', validUntil: day(30) });

    const accounts = (await adapter.accounts(created.bankConsentId)) as { accounts: { resourceId: string }[] };
    const accountId = accounts.accounts[0]!.resourceId;
    const balances = (await adapter.balances(created.bankConsentId, accountId)) as { balances: unknown[] };
    expect(balances.balances).toHaveLength(3);
    // without dateFrom the adapter asks for the 90 days up to today: the bank requires a dateFrom
    const transactions = (await adapter.transactions(created.bankConsentId, accountId, { bookingStatus: 'both' })) as {
      transactions: { booked: { bookingDate: string }[] };
    };
    expect(transactions.transactions.booked.at(-1)!.bookingDate >= day(-90)).toBe(true);
    expect(transactions.transactions.booked.length).toBeGreaterThan(10);

    // frequencyPerDay 3 is used up: the bank's 429 ACCESS_EXCEEDED becomes the adapter's RATE_LIMITED
    const refused = await adapter.accounts(created.bankConsentId).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({
      code: 'RATE_LIMITED',
      extra: { bankId: 'contract-bank', bankCode: 'ACCESS_EXCEEDED' },
    });
    expect(broken).toEqual([]);
  });
});

describe('coverage', () => {
  it('every XS2A operation the stand-in offers was exercised above', () => {
    expect([...seen.keys()].sort()).toEqual(
      [
        'createConsent',
        'deleteConsent',
        'getAccountList',
        'getBalances',
        'getConsentAuthorisation',
        'getConsentInformation',
        'getConsentScaStatus',
        'getConsentStatus',
        'getTransactionList',
        'readAccountDetails',
      ].sort(),
    );
  });
});
