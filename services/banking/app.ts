/**
 * The banking service (specification §4.2): PSD2 account information for workspaces, through one
 * Berlin Group NextGenPSD2 adapter per bank (domain/banking/nextgenpsd2.ts). Every route but the
 * probes needs the account API's service key (`X-API-Key`, account-api → banking) and names the
 * workspace it acts for in `X-Workspace-Id`; consents are stored per workspace
 * (domain/banking/consents.ts) and a workspace only ever reaches its own.
 *
 * Which consent reads the accounts: `?consentId=` when given, else the workspace's newest valid
 * consent at that bank.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type pg from 'pg';
import { problemDetails, serverOptions } from '../../lib/http.js';
import type { DestinationStream } from 'pino';
import { AccountIdParam, AdaptersSchema, BankIdParam, ConsentBody, ConsentQuery, ConsentSchema, TransactionsQuery } from '../../domain/banking/schemas.js';
import { registerServiceKeyCheck, requireServiceKey, type ServiceKeyCheck } from '../../domain/service-keys/service-keys.js';
import { AppError } from '../../lib/errors.js';
import { ConsentStore, type Consent } from '../../domain/banking/consents.js';
import type { BankAdapter } from '../../domain/banking/nextgenpsd2.js';

export interface BankingDeps {
  pool: pg.Pool;
  secretsKey: string;
  adapters: Map<string, BankAdapter>;
  /** The service-key check of target `banking`; only the account API may call. */
  serviceKeys: ServiceKeyCheck;
  /** Who may call (default: the account API only). */
  callers?: readonly string[];
  logLevel?: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

export const BANKING_CALLERS = ['account-api'] as const;

const WorkspaceHeaders = Type.Object({
  'x-workspace-id': Type.String({ format: 'uuid' }),
  'x-psu-ip-address': Type.Optional(Type.String({ maxLength: 45 })),
});

const day = (d: Date) => d.toISOString().slice(0, 10);

export function publicConsent(c: Consent) {
  return {
    consentId: c.consentId,
    bankId: c.bankId,
    status: c.status,
    access: c.access,
    recurringIndicator: c.recurringIndicator,
    validUntil: c.validUntil,
    frequencyPerDay: c.frequencyPerDay,
    scaRedirect: c.status === 'received' ? c.scaRedirect : null,
    createdAt: c.createdAt.toISOString(),
  };
}

export async function buildBankingApp(deps: BankingDeps): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(deps.logLevel ?? 'info', { stream: deps.logStream })).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(problemDetails);
  const consents = new ConsentStore(deps.pool, deps.secretsKey);

  const adapter = (bankId: string) => {
    const found = deps.adapters.get(bankId);
    if (!found) {
      // the banks by id, not a path of this service (its caller's path differs: /api/banking/adapters)
      const known = [...deps.adapters.keys()];
      const banks = known.length <= 12 ? known.map((id) => `"${id}"`).join(', ') : `${known.slice(0, 3).map((id) => `"${id}"`).join(', ')} and ${known.length - 3} more (the adapters list has them all)`;
      throw new AppError('NOT_FOUND', `There is no bank "${bankId}" here; the banks are ${banks}.`, { bankId });
    }
    return found;
  };

  /** The workspace's newest valid consent at the bank (a received one is asked about: its SCA may be done). */
  async function newestValid(bank: BankAdapter, workspaceId: string) {
    for (const consent of await consents.usable(workspaceId, bank.id)) {
      if (consent.status === 'valid') return consent;
      const now = await bank.consentStatus(consent.bankConsentId);
      if (now.status !== consent.status) await consents.setStatus(consent.consentId, now.status, now.validUntil);
      if (now.status === 'valid') return consent;
    }
    throw ConsentStore.noValidConsent(bank.id);
  }

  /** Runs a bank read; a consent the bank calls expired is marked expired here too. */
  async function withConsent<T>(workspaceId: string, bankId: string, consentId: string | undefined, read: (bank: BankAdapter, bankConsentId: string) => Promise<T>) {
    const bank = adapter(bankId);
    const consent = consentId ? await consents.get(workspaceId, bankId, consentId) : await newestValid(bank, workspaceId);
    try {
      return await read(bank, consent.bankConsentId);
    } catch (err) {
      if (err instanceof AppError && err.extra.bankCode === 'CONSENT_EXPIRED') await consents.setStatus(consent.consentId, 'expired');
      throw err;
    }
  }

  app.get('/healthz', async () => ({ status: 'ok' as const }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await deps.pool.query('SELECT 1');
      return { status: 'ok' as const };
    } catch {
      return reply.code(503).send({ status: 'unavailable', detail: 'PostgreSQL is unavailable' });
    }
  });

  // consumers report the key they hold here (a rotation's switch proof, domain/service-keys/holders.ts)
  registerServiceKeyCheck(app as unknown as FastifyInstance, deps.serviceKeys);
  await app.register(async (instance) => {
    const r = instance.withTypeProvider<TypeBoxTypeProvider>();
    r.addHook('onRequest', requireServiceKey(deps.serviceKeys, deps.callers ?? BANKING_CALLERS));

    r.get('/banking/adapters', { schema: { response: { 200: AdaptersSchema } } }, async () => ({
      adapters: [...deps.adapters.values()].map((a) => ({ id: a.id, name: a.name, protocol: a.protocol })),
    }));

    r.post(
      '/banking/:bankId/consent',
      { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam }), body: ConsentBody, response: { 201: ConsentSchema } } },
      async (req, reply) => {
        const bank = adapter(req.params.bankId);
        const body: Static<typeof ConsentBody> = req.body ?? {};
        const today = day(new Date());
        const request = {
          access: body.access ?? { allPsd2: 'allAccounts' },
          recurringIndicator: body.recurringIndicator ?? true,
          validUntil: body.validUntil ?? day(new Date(Date.now() + 90 * 86_400_000)),
          frequencyPerDay: body.frequencyPerDay ?? (body.recurringIndicator === false ? 1 : 4),
        };
        if (request.validUntil < today) throw new AppError('BAD_REQUEST', `validUntil (${request.validUntil}) lies in the past.`);
        if (!request.recurringIndicator && request.frequencyPerDay !== 1) throw new AppError('BAD_REQUEST', 'A one-off consent (recurringIndicator false) has frequencyPerDay 1.');
        const created = await bank.createConsent(request, { ipAddress: req.headers['x-psu-ip-address'] ?? req.ip, redirectUrl: body.redirectUrl });
        const consent = await consents.insert(req.headers['x-workspace-id'], bank.id, request, created);
        req.log.info({ workspaceId: req.headers['x-workspace-id'], bankId: bank.id, consentId: consent.consentId }, 'consent created');
        return reply.code(201).send(publicConsent(consent));
      },
    );

    r.get(
      '/banking/:bankId/consent/:consentId',
      { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam, consentId: Type.String({ maxLength: 100 }) }), response: { 200: ConsentSchema } } },
      async (req) => {
        const bank = adapter(req.params.bankId);
        const consent = await consents.get(req.headers['x-workspace-id'], bank.id, req.params.consentId);
        // the bank has the last word on the status (SCA completed, revoked by the PSU, expired)
        const now = await bank.consentStatus(consent.bankConsentId);
        if (now.status !== consent.status || now.validUntil !== consent.validUntil) {
          await consents.setStatus(consent.consentId, now.status, now.validUntil);
          return publicConsent({ ...consent, status: now.status, validUntil: now.validUntil });
        }
        return publicConsent(consent);
      },
    );

    r.get(
      '/banking/:bankId/accounts',
      { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam }), querystring: ConsentQuery } },
      async (req) => withConsent(req.headers['x-workspace-id'], req.params.bankId, req.query.consentId, (bank, id) => bank.accounts(id)),
    );

    r.get(
      '/banking/:bankId/accounts/:accountId/balance',
      { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam, accountId: AccountIdParam }), querystring: ConsentQuery } },
      async (req) => withConsent(req.headers['x-workspace-id'], req.params.bankId, req.query.consentId, (bank, id) => bank.balances(id, req.params.accountId)),
    );

    r.get(
      '/banking/:bankId/accounts/:accountId/transactions',
      { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam, accountId: AccountIdParam }), querystring: TransactionsQuery } },
      async (req) => {
        const { consentId, bookingStatus = 'booked', dateFrom, dateTo } = req.query;
        if (dateFrom && dateTo && dateFrom > dateTo) throw new AppError('BAD_REQUEST', `dateFrom (${dateFrom}) lies after dateTo (${dateTo}).`);
        return withConsent(req.headers['x-workspace-id'], req.params.bankId, consentId, (bank, id) =>
          bank.transactions(id, req.params.accountId, { bookingStatus, dateFrom, dateTo }),
        );
      },
    );
  });

  return app;
}
