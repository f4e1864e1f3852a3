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
 * Accounts and transactions are derived from the bank id and the day only (ledger.ts); consents live
 * in memory (consents.ts); the routes are consent-routes.ts and account-routes.ts. `clock` lets a test
 * move the bank's day forward.
 */
import Fastify from 'fastify';
import { accountRoutes } from './account-routes.js';
import { consentRoutes, scaRoutes } from './consent-routes.js';
import { Consents } from './consents.js';
import { bankAccounts, day } from './ledger.js';
import { PsuError, requestIdOf, tppMessages, validRequestId } from './xs2a.js';

export { bankAccounts, transactionsOn, type BankTransaction } from './ledger.js';

export interface BankStandInOptions {
  host?: string;
  port?: number;
  /** The bank's name and BIC-like id; seeds its accounts. */
  bankId?: string;
  name?: string;
  /** The bank's notion of now (default: the real clock). */
  clock?: () => Date;
}

export async function startBankStandIn(opts: BankStandInOptions = {}) {
  const bankId = opts.bankId ?? 'sandbox';
  const name = opts.name ?? 'Sandbox Bank';
  const clock = opts.clock ?? (() => new Date());
  const consents = new Consents(() => day(clock()));
  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  let baseUrl = '';

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', requestIdOf(req));
    if (err instanceof PsuError) return reply.code(err.status).send(tppMessages(err.code, err.message));
    if (err.statusCode && err.statusCode < 500) return reply.code(400).send(tppMessages('FORMAT_ERROR', err.message));
    return reply.code(500).send(tppMessages('INTERNAL_SERVER_ERROR', 'internal error'));
  });

  /**
   * Every XS2A request carries X-Request-ID (a UUID), echoed in the answer. Every answer has one: a
   * request without a usable one is refused with an X-Request-ID of the bank's own.
   */
  app.addHook('onRequest', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    reply.header('x-request-id', requestIdOf(req));
    if (!validRequestId(req.headers['x-request-id']))
      throw new PsuError(400, 'FORMAT_ERROR', 'X-Request-ID (a UUID) is missing or malformed.');
  });

  // an XS2A resource the bank does not have, in NextGenPSD2's terms
  app.setNotFoundHandler(async (req, reply) => {
    reply.header('x-request-id', requestIdOf(req));
    return reply
      .code(404)
      .send(tppMessages('RESOURCE_UNKNOWN', `${req.method} ${req.url.split('?')[0]} is not a resource of this ASPSP.`));
  });

  consentRoutes(app, consents, () => baseUrl);
  scaRoutes(app, consents, name);
  accountRoutes(app, bankId, bankAccounts(bankId), consents);
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
