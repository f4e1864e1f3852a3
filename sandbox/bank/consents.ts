/**
 * The bank's consents (in memory): how one is established from a TPP's request, how it expires,
 * and how an account request uses one (checked, and counted against its `frequencyPerDay`).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { DATE, addDays } from './ledger.js';
import { PsuError } from './xs2a.js';

export type ConsentStatus = 'received' | 'valid' | 'rejected' | 'revokedByPsu' | 'expired' | 'terminatedByTpp';

export interface Consent {
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

export type AccessKind = 'accounts' | 'balances' | 'transactions';

/** A bank keeps consents for 180 days at most (a later validUntil is shortened, as the standard allows). */
const MAX_CONSENT_DAYS = 180;

export class Consents {
  private readonly byId = new Map<string, Consent>();
  private readonly byAuthorisationId = new Map<string, Consent>();

  /** `today` is the bank's day (`YYYY-MM-DD`). */
  constructor(readonly today: () => string) {}

  /** `POST /v1/consents`: the body and headers checked, a consent `received`. */
  establish(req: FastifyRequest): Consent {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const psuIp = req.headers['psu-ip-address'];
    if (typeof psuIp !== 'string' || !psuIp)
      throw new PsuError(400, 'FORMAT_ERROR', 'PSU-IP-Address is mandatory for establishing a consent.');
    const access = body.access;
    if (!access || typeof access !== 'object' || Array.isArray(access))
      throw new PsuError(400, 'FORMAT_ERROR', 'access is missing.');
    if (typeof body.recurringIndicator !== 'boolean')
      throw new PsuError(400, 'FORMAT_ERROR', 'recurringIndicator (boolean) is missing.');
    if (typeof body.validUntil !== 'string' || !DATE.test(body.validUntil))
      throw new PsuError(400, 'FORMAT_ERROR', 'validUntil (ISODate) is missing or malformed.');
    if (typeof body.frequencyPerDay !== 'number' || !Number.isInteger(body.frequencyPerDay) || body.frequencyPerDay < 1)
      throw new PsuError(400, 'FORMAT_ERROR', 'frequencyPerDay must be a positive integer.');
    if (typeof body.combinedServiceIndicator !== 'boolean')
      throw new PsuError(400, 'FORMAT_ERROR', 'combinedServiceIndicator (boolean) is missing.');
    const today = this.today();
    if (body.validUntil < today) throw new PsuError(400, 'PERIOD_INVALID', 'validUntil lies in the past.');
    if (!body.recurringIndicator && body.frequencyPerDay !== 1)
      throw new PsuError(400, 'FORMAT_ERROR', 'A one-off consent has frequencyPerDay 1.');
    const latest = addDays(today, MAX_CONSENT_DAYS);
    const redirect = req.headers['tpp-redirect-uri'];
    const consent: Consent = {
      consentId: randomUUID(),
      authorisationId: randomUUID(),
      access: access as Record<string, unknown>,
      recurringIndicator: body.recurringIndicator,
      validUntil: body.validUntil > latest ? latest : body.validUntil,
      frequencyPerDay: body.frequencyPerDay,
      combinedServiceIndicator: body.combinedServiceIndicator,
      status: 'received',
      redirectUri: typeof redirect === 'string' ? redirect : undefined,
      lastActionDate: today,
      accesses: new Map(),
    };
    this.byId.set(consent.consentId, consent);
    this.byAuthorisationId.set(consent.authorisationId, consent);
    return consent;
  }

  /** Marks a consent expired once its validUntil has passed. */
  refresh(consent: Consent): Consent {
    if ((consent.status === 'valid' || consent.status === 'received') && consent.validUntil < this.today())
      consent.status = 'expired';
    return consent;
  }

  /** The consent a `/v1/consents/{consentId}` path names (unknown: 403 CONSENT_UNKNOWN). */
  fromPath(id: string): Consent {
    const consent = this.byId.get(id);
    if (!consent)
      throw new PsuError(403, 'CONSENT_UNKNOWN', 'The consent-ID cannot be matched by the ASPSP relative to the TPP.');
    return this.refresh(consent);
  }

  /** The consent an SCA redirect's authorisation belongs to (not refreshed). */
  ofAuthorisation(authorisationId: string): Consent | undefined {
    return this.byAuthorisationId.get(authorisationId);
  }

  /** The Consent-ID header of an account request, checked and counted against frequencyPerDay. */
  use(req: FastifyRequest, kind: AccessKind): Consent {
    const id = req.headers['consent-id'];
    if (typeof id !== 'string' || !id) throw new PsuError(400, 'FORMAT_ERROR', 'The Consent-ID header is missing.');
    const consent = this.byId.get(id);
    if (!consent)
      throw new PsuError(400, 'CONSENT_UNKNOWN', 'The Consent-ID cannot be matched by the ASPSP relative to the TPP.');
    this.refresh(consent);
    if (consent.status === 'expired')
      throw new PsuError(
        401,
        'CONSENT_EXPIRED',
        `The consent was created by the PSU for a limited time (until ${consent.validUntil}), which has expired.`,
      );
    if (consent.status !== 'valid')
      throw new PsuError(401, 'CONSENT_INVALID', `The consent is ${consent.status}, not valid.`);
    if (!grants(consent.access, kind))
      throw new PsuError(401, 'CONSENT_INVALID', `The consent does not grant access to ${kind}.`);
    // a request with PSU-IP-Address is PSU-initiated and does not count against frequencyPerDay
    if (!req.headers['psu-ip-address']) {
      const used = consent.accesses.get(this.today()) ?? 0;
      if (used >= consent.frequencyPerDay)
        throw new PsuError(
          429,
          'ACCESS_EXCEEDED',
          `The access on the account has been exceeding the consented multiplicity per day (${consent.frequencyPerDay}).`,
        );
      consent.accesses.set(this.today(), used + 1);
    }
    consent.lastActionDate = this.today();
    return consent;
  }
}

function grants(access: Record<string, unknown>, kind: AccessKind): boolean {
  return (
    access.allPsd2 === 'allAccounts' ||
    access.availableAccounts === 'allAccounts' ||
    Array.isArray(access[kind]) ||
    (kind === 'accounts' && (Array.isArray(access.balances) || Array.isArray(access.transactions)))
  );
}
