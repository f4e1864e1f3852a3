/**
 * An ASPSP (a bank) as a TPP sees it through the Berlin Group NextGenPSD2 XS2A interface (v1.3.x,
 * account information service, redirect SCA approach). It stands in for the banks outside the
 * platform, speaking their protocol:
 *
 * - `POST /v1/consents` (headers `X-Request-ID`, `PSU-IP-Address`, `TPP-Redirect-URI`; body with
 *   `access`, `recurringIndicator`, `validUntil`, `frequencyPerDay`, `combinedServiceIndicator`)
 *   → 201 `{ consentStatus: 'received', consentId, _links: { scaRedirect, self, status } }`;
 * - `GET /v1/consents/{consentId}`, `GET /v1/consents/{consentId}/status`, `DELETE /v1/consents/{consentId}`
 *   (→ terminatedByTpp), `GET /v1/consents/{consentId}/authorisations` (the one implicit authorisation)
 *   and `…/authorisations/{authorisationId}` (its scaStatus);
 * - the SCA redirect page `GET /sca/{authorisationId}` (an HTML form) and `POST /sca/{authorisationId}`
 *   (`decision=approve|reject`, form-encoded): the consent becomes valid or rejected and the PSU is
 *   sent back to the TPP-Redirect-URI (303); `POST /sca/{authorisationId}/revoke`: the PSU withdraws it
 *   (revokedByPsu);
 * - `GET /v1/accounts`, `GET /v1/accounts/{resourceId}`, `GET /v1/accounts/{resourceId}/balances`,
 *   `GET /v1/accounts/{resourceId}/transactions?bookingStatus=booked|pending|both&dateFrom&dateTo`
 *   (dateFrom mandatory) with the `Consent-ID` header.
 *
 * Every request and answer of these operations conforms to the Berlin Group's NextGenPSD2 XS2A 1.3.11
 * OpenAPI document (test/integration/bank-stand-in-openapi.test.ts): every answer has an
 * `X-Request-ID`, refusals and unknown resources are `tppMessages`.
 *
 * Limits as a bank enforces them, answered with NextGenPSD2 `tppMessages`: more account accesses in
 * a day than the consent's `frequencyPerDay` → 429 ACCESS_EXCEEDED; a consent past `validUntil`
 * → 401 CONSENT_EXPIRED (its status becomes `expired`); a consent not (yet) valid → 401
 * CONSENT_INVALID; an unknown one → CONSENT_UNKNOWN (403 in the path, 400 in the header).
 *
 * Accounts and transactions are derived from the bank id and the day only (a seeded generator), so
 * the same question gets the same answer on every run. Consents live in memory. `clock` lets a test
 * move the bank's day forward.
 */
import { createHash, randomUUID } from 'node:crypto';
import Fastify, { type FastifyRequest } from 'fastify';

export interface BankStandInOptions {
  host?: string;
  port?: number;
  /** The bank's name and BIC-like id; seeds its accounts. */
  bankId?: string;
  name?: string;
  /** The bank's notion of now (default: the real clock). */
  clock?: () => Date;
}

type ConsentStatus = 'received' | 'valid' | 'rejected' | 'revokedByPsu' | 'expired' | 'terminatedByTpp';

interface Consent {
  consentId: string;
  authorisationId: string;
  access: Record<string, unknown>;
  recurringIndicator: boolean;
  validUntil: string;
  frequencyPerDay: number;
  combinedServiceIndicator: boolean;
  status: ConsentStatus;
  redirectUri: string | undefined;
  lastActionDate: string;
  /** accesses without the PSU per day: `YYYY-MM-DD` → count */
  accesses: Map<string, number>;
}

interface Account {
  resourceId: string;
  iban: string;
  currency: string;
  name: string;
  product: string;
  cashAccountType: 'CACC' | 'SVGS';
  opening: number;
}

export interface BankTransaction {
  transactionId: string;
  bookingDate?: string;
  valueDate: string;
  transactionAmount: { currency: string; amount: string };
  creditorName?: string;
  debtorName?: string;
  remittanceInformationUnstructured: string;
}

const day = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (iso: string, n: number) => day(new Date(Date.parse(`${iso}T00:00:00Z`) + n * 86_400_000));
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A number in [0, 1) fixed by its inputs. */
function unit(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('|')).digest().readUInt32BE(0) / 2 ** 32;
}

const COUNTERPARTIES = ['Acme Supplies GmbH', 'Northwind Traders', 'Globex Services', 'Initech AG', 'Umbrella Logistics', 'Stark Retail', 'Wayne Consulting'];

export function bankAccounts(bankId: string): Account[] {
  const digits = (seed: string) => String(Math.floor(unit(bankId, seed) * 1e10)).padStart(10, '0');
  return [
    { resourceId: `${bankId}-cur-1`, iban: `DE89370400440${digits('cur')}`.slice(0, 22), currency: 'EUR', name: 'Business current account', product: 'Girokonto Business', cashAccountType: 'CACC', opening: 25_000 },
    { resourceId: `${bankId}-sav-1`, iban: `DE27100777770${digits('sav')}`.slice(0, 22), currency: 'EUR', name: 'Reserve savings', product: 'Tagesgeld', cashAccountType: 'SVGS', opening: 80_000 },
  ];
}

/** The transactions of one account on one day: 0 to 3, fixed by (bank, account, day). */
export function transactionsOn(bankId: string, account: Account, date: string): BankTransaction[] {
  const count = account.cashAccountType === 'SVGS' ? (unit(bankId, account.resourceId, date, 'n') < 0.1 ? 1 : 0) : Math.floor(unit(bankId, account.resourceId, date, 'n') * 4);
  const out: BankTransaction[] = [];
  for (let i = 0; i < count; i++) {
    const incoming = unit(account.resourceId, date, i, 'dir') < 0.45;
    const cents = Math.round((20 + unit(account.resourceId, date, i, 'amt') * 2_480) * 100);
    const amount = ((incoming ? cents : -cents) / 100).toFixed(2);
    const party = COUNTERPARTIES[Math.floor(unit(account.resourceId, date, i, 'who') * COUNTERPARTIES.length)]!;
    out.push({
      transactionId: `${account.resourceId}-${date.replace(/-/g, '')}-${i + 1}`,
      bookingDate: date,
      valueDate: date,
      transactionAmount: { currency: account.currency, amount },
      ...(incoming ? { debtorName: party } : { creditorName: party }),
      remittanceInformationUnstructured: incoming ? `Invoice payment ${party}` : `Payment to ${party}`,
    });
  }
  return out;
}

/** Cents of all transactions of an account from `from` to `to` inclusive. */
function sumCents(bankId: string, account: Account, from: string, to: string): number {
  let cents = 0;
  for (let d = from; d <= to; d = addDays(d, 1)) {
    for (const t of transactionsOn(bankId, account, d)) cents += Math.round(Number(t.transactionAmount.amount) * 100);
  }
  return cents;
}

const validRequestId = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
/** The request's X-Request-ID, or one of the bank's own when it has none that is a UUID. */
const requestIdOf = (req: FastifyRequest) => {
  const sent = req.headers['x-request-id'];
  return validRequestId(sent) ? sent : randomUUID();
};

class PsuError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    text: string,
  ) {
    super(text);
  }
}

/** The bank's days with pending transactions: today and yesterday are not booked yet. */
const PENDING_DAYS = 2;
/** Account history the bank keeps (days); opening balances are as of its first day. */
const HISTORY_DAYS = 400;

export async function startBankStandIn(opts: BankStandInOptions = {}) {
  const bankId = opts.bankId ?? 'sandbox';
  const name = opts.name ?? 'Sandbox Bank';
  const clock = opts.clock ?? (() => new Date());
  const consents = new Map<string, Consent>();
  const byAuthorisation = new Map<string, Consent>();
  const accounts = bankAccounts(bankId);
  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  let baseUrl = '';

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', requestIdOf(req));
    if (err instanceof PsuError) return reply.code(err.status).send({ tppMessages: [{ category: 'ERROR', code: err.code, text: err.message }] });
    if (err.statusCode && err.statusCode < 500) return reply.code(400).send({ tppMessages: [{ category: 'ERROR', code: 'FORMAT_ERROR', text: err.message }] });
    return reply.code(500).send({ tppMessages: [{ category: 'ERROR', code: 'INTERNAL_SERVER_ERROR', text: 'internal error' }] });
  });

  /**
   * Every XS2A request carries X-Request-ID (a UUID), echoed in the answer. Every answer has one: a
   * request without a usable one is refused with an X-Request-ID of the bank's own.
   */
  app.addHook('onRequest', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    reply.header('x-request-id', requestIdOf(req));
    if (!validRequestId(req.headers['x-request-id'])) throw new PsuError(400, 'FORMAT_ERROR', 'X-Request-ID (a UUID) is missing or malformed.');
  });

  // an XS2A resource the bank does not have, in NextGenPSD2's terms
  app.setNotFoundHandler(async (req, reply) => {
    reply.header('x-request-id', requestIdOf(req));
    return reply.code(404).send({ tppMessages: [{ category: 'ERROR', code: 'RESOURCE_UNKNOWN', text: `${req.method} ${req.url.split('?')[0]} is not a resource of this ASPSP.` }] });
  });

  const today = () => day(clock());

  /** Marks a consent expired once its validUntil has passed. */
  function refresh(consent: Consent) {
    if ((consent.status === 'valid' || consent.status === 'received') && consent.validUntil < today()) consent.status = 'expired';
    return consent;
  }

  function consentFromPath(id: string): Consent {
    const consent = consents.get(id);
    if (!consent) throw new PsuError(403, 'CONSENT_UNKNOWN', 'The consent-ID cannot be matched by the ASPSP relative to the TPP.');
    return refresh(consent);
  }

  /** The Consent-ID header of an account request, checked and counted against frequencyPerDay. */
  function useConsent(req: FastifyRequest, kind: 'accounts' | 'balances' | 'transactions'): Consent {
    const id = req.headers['consent-id'];
    if (typeof id !== 'string' || !id) throw new PsuError(400, 'FORMAT_ERROR', 'The Consent-ID header is missing.');
    const consent = consents.get(id);
    if (!consent) throw new PsuError(400, 'CONSENT_UNKNOWN', 'The Consent-ID cannot be matched by the ASPSP relative to the TPP.');
    refresh(consent);
    if (consent.status === 'expired') throw new PsuError(401, 'CONSENT_EXPIRED', `The consent was created by the PSU for a limited time (until ${consent.validUntil}), which has expired.`);
    if (consent.status !== 'valid') throw new PsuError(401, 'CONSENT_INVALID', `The consent is ${consent.status}, not valid.`);
    const access = consent.access;
    const granted = access.allPsd2 === 'allAccounts' || access.availableAccounts === 'allAccounts' || Array.isArray(access[kind]) || (kind === 'accounts' && (Array.isArray(access.balances) || Array.isArray(access.transactions)));
    if (!granted) throw new PsuError(401, 'CONSENT_INVALID', `The consent does not grant access to ${kind}.`);
    // a request with PSU-IP-Address is PSU-initiated and does not count against frequencyPerDay
    if (!req.headers['psu-ip-address']) {
      const used = consent.accesses.get(today()) ?? 0;
      if (used >= consent.frequencyPerDay) throw new PsuError(429, 'ACCESS_EXCEEDED', `The access on the account has been exceeding the consented multiplicity per day (${consent.frequencyPerDay}).`);
      consent.accesses.set(today(), used + 1);
    }
    consent.lastActionDate = today();
    return consent;
  }

  function account(id: string): Account {
    const found = accounts.find((a) => a.resourceId === id);
    if (!found) throw new PsuError(404, 'RESOURCE_UNKNOWN', 'The addressed account is not known to the ASPSP.');
    return found;
  }

  const accountRef = (a: Account) => ({ iban: a.iban, currency: a.currency });
  const accountLinks = (a: Account) => ({
    balances: { href: `/v1/accounts/${a.resourceId}/balances` },
    transactions: { href: `/v1/accounts/${a.resourceId}/transactions` },
  });

  app.post('/v1/consents', async (req, reply) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const psuIp = req.headers['psu-ip-address'];
    if (typeof psuIp !== 'string' || !psuIp) throw new PsuError(400, 'FORMAT_ERROR', 'PSU-IP-Address is mandatory for establishing a consent.');
    const access = body.access;
    if (!access || typeof access !== 'object' || Array.isArray(access)) throw new PsuError(400, 'FORMAT_ERROR', 'access is missing.');
    if (typeof body.recurringIndicator !== 'boolean') throw new PsuError(400, 'FORMAT_ERROR', 'recurringIndicator (boolean) is missing.');
    if (typeof body.validUntil !== 'string' || !DATE.test(body.validUntil)) throw new PsuError(400, 'FORMAT_ERROR', 'validUntil (ISODate) is missing or malformed.');
    if (typeof body.frequencyPerDay !== 'number' || !Number.isInteger(body.frequencyPerDay) || body.frequencyPerDay < 1) throw new PsuError(400, 'FORMAT_ERROR', 'frequencyPerDay must be a positive integer.');
    if (typeof body.combinedServiceIndicator !== 'boolean') throw new PsuError(400, 'FORMAT_ERROR', 'combinedServiceIndicator (boolean) is missing.');
    if (body.validUntil < today()) throw new PsuError(400, 'PERIOD_INVALID', 'validUntil lies in the past.');
    if (!body.recurringIndicator && body.frequencyPerDay !== 1) throw new PsuError(400, 'FORMAT_ERROR', 'A one-off consent has frequencyPerDay 1.');
    // a bank keeps consents for 180 days at most (a later validUntil is shortened, as the standard allows)
    const validUntil = body.validUntil > addDays(today(), 180) ? addDays(today(), 180) : body.validUntil;
    const redirect = req.headers['tpp-redirect-uri'];
    const consent: Consent = {
      consentId: randomUUID(),
      authorisationId: randomUUID(),
      access: access as Record<string, unknown>,
      recurringIndicator: body.recurringIndicator,
      validUntil,
      frequencyPerDay: body.frequencyPerDay,
      combinedServiceIndicator: body.combinedServiceIndicator,
      status: 'received',
      redirectUri: typeof redirect === 'string' ? redirect : undefined,
      lastActionDate: today(),
      accesses: new Map(),
    };
    consents.set(consent.consentId, consent);
    byAuthorisation.set(consent.authorisationId, consent);
    reply.header('aspsp-sca-approach', 'REDIRECT').header('location', `/v1/consents/${consent.consentId}`);
    return reply.code(201).send({
      consentStatus: consent.status,
      consentId: consent.consentId,
      _links: {
        scaRedirect: { href: `${baseUrl}/sca/${consent.authorisationId}` },
        self: { href: `/v1/consents/${consent.consentId}` },
        status: { href: `/v1/consents/${consent.consentId}/status` },
        scaStatus: { href: `/v1/consents/${consent.consentId}/authorisations/${consent.authorisationId}` },
      },
    });
  });

  app.get<{ Params: { id: string } }>('/v1/consents/:id', async (req) => {
    const c = consentFromPath(req.params.id);
    return { access: c.access, recurringIndicator: c.recurringIndicator, validUntil: c.validUntil, frequencyPerDay: c.frequencyPerDay, lastActionDate: c.lastActionDate, consentStatus: c.status };
  });

  app.get<{ Params: { id: string } }>('/v1/consents/:id/status', async (req) => ({ consentStatus: consentFromPath(req.params.id).status }));

  app.get<{ Params: { id: string } }>('/v1/consents/:id/authorisations', async (req) => ({ authorisationIds: [consentFromPath(req.params.id).authorisationId] }));

  app.get<{ Params: { id: string; auth: string } }>('/v1/consents/:id/authorisations/:auth', async (req) => {
    const c = consentFromPath(req.params.id);
    if (c.authorisationId !== req.params.auth) throw new PsuError(403, 'RESOURCE_UNKNOWN', 'Unknown authorisation.');
    return { scaStatus: c.status === 'valid' ? 'finalised' : c.status === 'rejected' ? 'failed' : 'received' };
  });

  app.delete<{ Params: { id: string } }>('/v1/consents/:id', async (req, reply) => {
    const c = consentFromPath(req.params.id);
    c.status = 'terminatedByTpp';
    return reply.code(204).send();
  });

  // the SCA redirect: the page the PSU sees, and its form
  app.get<{ Params: { auth: string } }>('/sca/:auth', async (req, reply) => {
    const c = byAuthorisation.get(req.params.auth);
    if (!c) return reply.code(404).type('text/html').send('<!doctype html><title>Unknown</title><p>This authorisation is unknown.</p>');
    const scope = Object.keys(c.access).join(', ');
    return reply.type('text/html; charset=utf-8').send(`<!doctype html>
<html><head><meta charset="utf-8"><title>${name}: confirm access</title></head>
<body><h1>${name}</h1>
<p>A third party asks to read your accounts (${scope}) until ${c.validUntil}, up to ${c.frequencyPerDay} times a day.</p>
<form method="post" action="/sca/${c.authorisationId}">
<label>TAN <input name="tan" value="123456"></label>
<button name="decision" value="approve">Approve</button>
<button name="decision" value="reject">Reject</button>
</form></body></html>`);
  });

  app.post<{ Params: { auth: string }; Body: Record<string, string> }>('/sca/:auth', async (req, reply) => {
    const c = byAuthorisation.get(req.params.auth);
    if (!c) return reply.code(404).type('text/html').send('<!doctype html><p>This authorisation is unknown.</p>');
    refresh(c);
    if (c.status !== 'received') return reply.code(409).type('text/html').send(`<!doctype html><p>This consent is ${c.status}.</p>`);
    const decision = req.body?.decision;
    if (decision !== 'approve' && decision !== 'reject') return reply.code(400).type('text/html').send('<!doctype html><p>decision must be approve or reject.</p>');
    c.status = decision === 'approve' ? 'valid' : 'rejected';
    if (c.redirectUri) return reply.code(303).header('location', c.redirectUri).send();
    return reply.type('text/html').send(`<!doctype html><p>Consent ${c.status}. You can close this page.</p>`);
  });

  // the PSU withdraws the consent in the bank's online banking (the consent's page)
  app.post<{ Params: { auth: string } }>('/sca/:auth/revoke', async (req, reply) => {
    const c = byAuthorisation.get(req.params.auth);
    if (!c) return reply.code(404).type('text/html').send('<!doctype html><p>This authorisation is unknown.</p>');
    if (refresh(c).status !== 'valid') return reply.code(409).type('text/html').send(`<!doctype html><p>This consent is ${c.status}.</p>`);
    c.status = 'revokedByPsu';
    return reply.type('text/html').send('<!doctype html><p>Access withdrawn.</p>');
  });

  const accountDetails = (a: Account) => ({
    resourceId: a.resourceId,
    iban: a.iban,
    currency: a.currency,
    name: a.name,
    product: a.product,
    cashAccountType: a.cashAccountType,
    status: 'enabled',
    _links: accountLinks(a),
  });

  app.get('/v1/accounts', async (req) => {
    useConsent(req, 'accounts');
    return { accounts: accounts.map(accountDetails) };
  });

  app.get<{ Params: { id: string } }>('/v1/accounts/:id', async (req) => {
    useConsent(req, 'accounts');
    return { account: accountDetails(account(req.params.id)) };
  });

  app.get<{ Params: { id: string } }>('/v1/accounts/:id/balances', async (req) => {
    useConsent(req, 'balances');
    const a = account(req.params.id);
    const now = today();
    const first = addDays(now, -HISTORY_DAYS);
    const bookedUntil = addDays(now, -PENDING_DAYS);
    const openingCents = Math.round(a.opening * 100);
    const booked = openingCents + sumCents(bankId, a, first, bookedUntil);
    const expected = booked + sumCents(bankId, a, addDays(bookedUntil, 1), now);
    const money = (cents: number) => ({ currency: a.currency, amount: (cents / 100).toFixed(2) });
    return {
      account: accountRef(a),
      balances: [
        { balanceAmount: money(booked), balanceType: 'closingBooked', referenceDate: bookedUntil },
        { balanceAmount: money(expected), balanceType: 'expected', lastChangeDateTime: `${now}T00:00:00Z` },
        { balanceAmount: money(expected), balanceType: 'interimAvailable', referenceDate: now },
      ],
    };
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>('/v1/accounts/:id/transactions', async (req) => {
    const { bookingStatus, dateFrom, dateTo } = req.query;
    if (bookingStatus !== 'booked' && bookingStatus !== 'pending' && bookingStatus !== 'both') {
      throw new PsuError(400, 'PARAMETER_NOT_SUPPORTED', 'bookingStatus must be booked, pending or both.');
    }
    // dateFrom is mandated unless a delta access (entryReferenceFrom, deltaList) is asked for, which this bank does not offer
    if (dateFrom === undefined || !DATE.test(dateFrom)) throw new PsuError(400, 'FORMAT_ERROR', 'dateFrom (an ISODate) is missing or malformed.');
    if (dateTo !== undefined && !DATE.test(dateTo)) throw new PsuError(400, 'FORMAT_ERROR', 'dateTo must be an ISODate.');
    useConsent(req, 'transactions');
    const a = account(req.params.id);
    const now = today();
    const from = dateFrom;
    const to = dateTo && dateTo < now ? dateTo : now;
    if (from > to) throw new PsuError(400, 'PERIOD_INVALID', 'dateFrom lies after dateTo.');
    if (from < addDays(now, -HISTORY_DAYS)) throw new PsuError(400, 'PERIOD_INVALID', `Transactions are kept for ${HISTORY_DAYS} days.`);
    const bookedUntil = addDays(now, -PENDING_DAYS);
    const booked: BankTransaction[] = [];
    const pending: BankTransaction[] = [];
    // newest first, as banks list them
    for (let d = to; d >= from; d = addDays(d, -1)) {
      for (const t of transactionsOn(bankId, a, d)) {
        if (d <= bookedUntil) booked.push(t);
        else {
          const { bookingDate: _b, ...rest } = t;
          pending.push(rest);
        }
      }
    }
    const transactions: Record<string, unknown> = { _links: { account: { href: `/v1/accounts/${a.resourceId}` } } };
    if (bookingStatus !== 'pending') transactions.booked = booked;
    if (bookingStatus !== 'booked') transactions.pending = pending;
    return { account: accountRef(a), transactions };
  });

  app.get('/healthz', async () => ({ status: 'ok' }));

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  baseUrl = address.replace('[::1]', '127.0.0.1');
  return {
    url: baseUrl,
    bankId,
    name,
    async close() {
      if (app.server.listening) await app.close();
    },
  };
}

export type BankStandIn = Awaited<ReturnType<typeof startBankStandIn>>;

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env.BANK_PORT ?? 3210);
  const bank = await startBankStandIn({ port, bankId: process.env.BANK_ID ?? 'sandbox' });
  console.log(`bank stand-in (NextGenPSD2) listening on ${bank.url}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void bank.close());
}

