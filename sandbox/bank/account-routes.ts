/** The account information resources (`/v1/accounts…`): each request uses the Consent-ID it names. */
import type { FastifyInstance } from 'fastify';
import type { Consents } from './consents.js';
import { DATE, HISTORY_DAYS, addDays, balancesOn, transactionsBetween, type Account } from './ledger.js';
import { PsuError } from './xs2a.js';

const accountRef = (a: Account) => ({ iban: a.iban, currency: a.currency });
const accountDetails = (a: Account) => ({
  resourceId: a.resourceId,
  iban: a.iban,
  currency: a.currency,
  name: a.name,
  product: a.product,
  cashAccountType: a.cashAccountType,
  status: 'enabled',
  _links: {
    balances: { href: `/v1/accounts/${a.resourceId}/balances` },
    transactions: { href: `/v1/accounts/${a.resourceId}/transactions` },
  },
});

export function accountRoutes(app: FastifyInstance, bankId: string, accounts: Account[], consents: Consents) {
  function account(id: string): Account {
    const found = accounts.find((a) => a.resourceId === id);
    if (!found) throw new PsuError(404, 'RESOURCE_UNKNOWN', 'The addressed account is not known to the ASPSP.');
    return found;
  }

  app.get('/v1/accounts', async (req) => {
    consents.use(req, 'accounts');
    return { accounts: accounts.map(accountDetails) };
  });

  app.get<{ Params: { id: string } }>('/v1/accounts/:id', async (req) => {
    consents.use(req, 'accounts');
    return { account: accountDetails(account(req.params.id)) };
  });

  app.get<{ Params: { id: string } }>('/v1/accounts/:id/balances', async (req) => {
    consents.use(req, 'balances');
    const a = account(req.params.id);
    return { account: accountRef(a), balances: balancesOn(bankId, a, consents.today()) };
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>(
    '/v1/accounts/:id/transactions',
    async (req) => {
      const { bookingStatus, dateFrom, dateTo } = req.query;
      if (bookingStatus !== 'booked' && bookingStatus !== 'pending' && bookingStatus !== 'both') {
        throw new PsuError(400, 'PARAMETER_NOT_SUPPORTED', 'bookingStatus must be booked, pending or both.');
      }
      // dateFrom is mandated unless a delta access (entryReferenceFrom, deltaList) is asked for, which this bank does not offer
      if (dateFrom === undefined || !DATE.test(dateFrom))
        throw new PsuError(400, 'FORMAT_ERROR', 'dateFrom (an ISODate) is missing or malformed.');
      if (dateTo !== undefined && !DATE.test(dateTo))
        throw new PsuError(400, 'FORMAT_ERROR', 'dateTo must be an ISODate.');
      consents.use(req, 'transactions');
      const a = account(req.params.id);
      const now = consents.today();
      const to = dateTo && dateTo < now ? dateTo : now;
      if (dateFrom > to) throw new PsuError(400, 'PERIOD_INVALID', 'dateFrom lies after dateTo.');
      if (dateFrom < addDays(now, -HISTORY_DAYS))
        throw new PsuError(400, 'PERIOD_INVALID', `Transactions are kept for ${HISTORY_DAYS} days.`);
      const { booked, pending } = transactionsBetween(bankId, a, dateFrom, to, now);
      const transactions: Record<string, unknown> = { _links: { account: { href: `/v1/accounts/${a.resourceId}` } } };
      if (bookingStatus !== 'pending') transactions.booked = booked;
      if (bookingStatus !== 'booked') transactions.pending = pending;
      return { account: accountRef(a), transactions };
    },
  );
}
