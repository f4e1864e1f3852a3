/**
 * The banking service's adapter for one bank: a client of the bank's Berlin Group NextGenPSD2
 * XS2A interface (account information, redirect SCA). Every request carries a fresh `X-Request-ID`;
 * consent creation carries the PSU's `PSU-IP-Address` (the PSU is present); account reads do not
 * (the platform reads unattended, which the bank counts against `frequencyPerDay`).
 *
 * What the bank answers becomes an AppError naming the bank: unreachable or too slow → 503, a
 * 5xx or an answer that is not NextGenPSD2 → 502, ACCESS_EXCEEDED → 429, CONSENT_EXPIRED /
 * CONSENT_INVALID / CONSENT_UNKNOWN → 409 (the workspace needs a new consent), RESOURCE_UNKNOWN
 * → 404, other 4xx → 400 with the bank's text. The bank's code is in `bankCode`. The Consent-ID is
 * a credential: it is never part of an error or a log line.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../lib/errors.js';

export type ConsentStatus = 'received' | 'valid' | 'rejected' | 'revokedByPsu' | 'expired' | 'terminatedByTpp';
export const CONSENT_STATUSES: readonly ConsentStatus[] = [
  'received',
  'valid',
  'rejected',
  'revokedByPsu',
  'expired',
  'terminatedByTpp',
];
export type BookingStatus = 'booked' | 'pending' | 'both';

export interface Amount {
  currency: string;
  amount: string;
}

export interface ConsentRequest {
  access: Record<string, unknown>;
  recurringIndicator: boolean;
  validUntil: string;
  frequencyPerDay: number;
}

export interface BankAdapter {
  id: string;
  name: string;
  protocol: 'berlin-group-nextgenpsd2';
  createConsent(
    req: ConsentRequest,
    psu: { ipAddress: string; redirectUrl?: string },
  ): Promise<{ bankConsentId: string; status: ConsentStatus; scaRedirect: string | null }>;
  consentStatus(bankConsentId: string): Promise<{ status: ConsentStatus; validUntil: string }>;
  accounts(bankConsentId: string): Promise<unknown>;
  balances(bankConsentId: string, accountId: string): Promise<unknown>;
  transactions(
    bankConsentId: string,
    accountId: string,
    q: { bookingStatus: BookingStatus; dateFrom?: string; dateTo?: string },
  ): Promise<unknown>;
}

interface TppMessage {
  category?: string;
  code?: string;
  text?: string;
}

/** The adapters of BANKING_BANKS (`id=url,…`). */
export function adaptersFromConfig(banks: string, timeoutMs: number): Map<string, BankAdapter> {
  const out = new Map<string, BankAdapter>();
  for (const pair of banks.split(',')) {
    const at = pair.indexOf('=');
    const id = pair.slice(0, at);
    out.set(id, new NextGenPsd2Adapter(id, bankName(id), pair.slice(at + 1), timeoutMs));
  }
  return out;
}

const bankName = (id: string) =>
  id === 'sandbox'
    ? 'Sandbox Bank'
    : id.replace(/(^|-)(\w)/g, (_, s: string, c: string) => `${s ? ' ' : ''}${c.toUpperCase()}`);

export class NextGenPsd2Adapter implements BankAdapter {
  readonly protocol = 'berlin-group-nextgenpsd2' as const;

  constructor(
    readonly id: string,
    readonly name: string,
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  private async request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<{ status: number; json: unknown; headers: Headers }> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: {
          accept: 'application/json',
          'x-request-id': randomUUID(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'manual',
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new AppError(
        'UNAVAILABLE',
        `The bank "${this.name}" (${this.id}) ${timedOut ? `did not answer within ${this.timeoutMs / 1000} s` : 'cannot be reached'}; retry later.`,
        { bankId: this.id },
      );
    }
    const text = await res.text().catch(() => '');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.status >= 200 && res.status < 300) {
      if (res.status !== 204 && (json === undefined || typeof json !== 'object')) this.badAnswer(res.status);
      return { status: res.status, json, headers: res.headers };
    }
    throw this.mapError(res.status, json);
  }

  private badAnswer(status: number): never {
    throw new AppError(
      'BAD_GATEWAY',
      `The bank "${this.name}" (${this.id}) sent an answer that is not NextGenPSD2 (HTTP ${status}).`,
      { bankId: this.id },
    );
  }

  private mapError(status: number, json: unknown): AppError {
    const message =
      (json as { tppMessages?: TppMessage[] } | undefined)?.tppMessages?.find((m) => m.category === 'ERROR') ??
      (json as { tppMessages?: TppMessage[] } | undefined)?.tppMessages?.[0];
    const bankCode = typeof message?.code === 'string' ? message.code : undefined;
    const text = typeof message?.text === 'string' ? message.text.slice(0, 300) : undefined;
    const extra = { bankId: this.id, ...(bankCode ? { bankCode } : {}) };
    const bank = `The bank "${this.name}" (${this.id})`;
    if (status >= 500 || !bankCode)
      return new AppError('BAD_GATEWAY', `${bank} failed to answer (HTTP ${status}).`, extra);
    switch (bankCode) {
      case 'ACCESS_EXCEEDED':
        return new AppError(
          'RATE_LIMITED',
          `${bank} refused: this consent's accesses per day (frequencyPerDay) are used up; retry tomorrow or create a consent with a higher frequencyPerDay.`,
          extra,
        );
      case 'CONSENT_EXPIRED':
        return new AppError('CONFLICT', `${bank} says the consent has expired; create a new consent.`, extra);
      case 'CONSENT_INVALID':
      case 'CONSENT_UNKNOWN':
        return new AppError(
          'CONFLICT',
          `${bank} does not accept the consent (${bankCode}): ${text ?? 'not valid'}. Complete its SCA or create a new consent.`,
          extra,
        );
      case 'RESOURCE_UNKNOWN':
        return new AppError('NOT_FOUND', `${bank} knows no such account under this consent.`, extra);
      default:
        return new AppError(
          'BAD_REQUEST',
          `${bank} refused the request (${bankCode}): ${text ?? `HTTP ${status}`}.`,
          extra,
        );
    }
  }

  async createConsent(req: ConsentRequest, psu: { ipAddress: string; redirectUrl?: string }) {
    const headers: Record<string, string> = { 'psu-ip-address': psu.ipAddress, 'tpp-redirect-preferred': 'true' };
    if (psu.redirectUrl) headers['tpp-redirect-uri'] = psu.redirectUrl;
    const { json } = await this.request('POST', '/v1/consents', headers, { ...req, combinedServiceIndicator: false });
    const body = json as {
      consentId?: unknown;
      consentStatus?: unknown;
      _links?: { scaRedirect?: { href?: unknown } };
    };
    if (typeof body.consentId !== 'string' || !isStatus(body.consentStatus)) this.badAnswer(201);
    const href = body._links?.scaRedirect?.href;
    return {
      bankConsentId: body.consentId,
      status: body.consentStatus,
      scaRedirect: typeof href === 'string' ? href : null,
    };
  }

  async consentStatus(bankConsentId: string) {
    const { json } = await this.request('GET', `/v1/consents/${encodeURIComponent(bankConsentId)}`);
    const body = json as { consentStatus?: unknown; validUntil?: unknown };
    if (!isStatus(body.consentStatus) || typeof body.validUntil !== 'string') this.badAnswer(200);
    return { status: body.consentStatus, validUntil: body.validUntil };
  }

  async accounts(bankConsentId: string) {
    return (await this.request('GET', '/v1/accounts', { 'consent-id': bankConsentId })).json;
  }

  async balances(bankConsentId: string, accountId: string) {
    return (
      await this.request('GET', `/v1/accounts/${encodeURIComponent(accountId)}/balances`, {
        'consent-id': bankConsentId,
      })
    ).json;
  }

  async transactions(
    bankConsentId: string,
    accountId: string,
    q: { bookingStatus: BookingStatus; dateFrom?: string; dateTo?: string },
  ) {
    // NextGenPSD2 mandates dateFrom (short of a delta access): without one, the 90 days up to dateTo or today, whichever is earlier
    const today = new Date().toISOString().slice(0, 10);
    const end = q.dateTo && q.dateTo < today ? q.dateTo : today;
    const dateFrom =
      q.dateFrom ??
      new Date(Date.parse(`${end}T00:00:00Z`) - DEFAULT_PERIOD_DAYS * 86_400_000).toISOString().slice(0, 10);
    const params = new URLSearchParams({ bookingStatus: q.bookingStatus, dateFrom });
    if (q.dateTo) params.set('dateTo', q.dateTo);
    return (
      await this.request('GET', `/v1/accounts/${encodeURIComponent(accountId)}/transactions?${params}`, {
        'consent-id': bankConsentId,
      })
    ).json;
  }
}

/** The period of a transactions request without dateFrom: this many days up to dateTo or today, whichever is earlier. */
export const DEFAULT_PERIOD_DAYS = 90;

const isStatus = (s: unknown): s is ConsentStatus =>
  typeof s === 'string' && (CONSENT_STATUSES as readonly string[]).includes(s);
