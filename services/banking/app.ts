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
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type pg from 'pg';
import { buildServiceApp } from '../../lib/service-app.js';
import {
  AccountIdParam,
  AdaptersSchema,
  BankIdParam,
  ConsentBody,
  ConsentQuery,
  ConsentSchema,
  TransactionsQuery,
} from '../../domain/banking/schemas.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { AppError } from '../../lib/errors.js';
import { ConsentStore, type Consent } from '../../domain/banking/consents.js';
import type { BankAdapter } from '../../domain/banking/nextgenpsd2.js';
import { registerKeyedRoutes, type KeyedRoutes } from '../service-routes.js';
import { ConsentReads } from './consent-reads.js';
import type { DestinationStream } from 'pino';

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
  const app = await buildServiceApp(deps.logLevel, { service: 'banking', logStream: deps.logStream });
  const reads = new ConsentReads(new ConsentStore(deps.pool, deps.secretsKey), deps.adapters);
  app.get('/healthz', async () => ({ status: 'ok' as const }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await deps.pool.query('SELECT 1');
      return { status: 'ok' as const };
    } catch {
      return reply.code(503).send({ status: 'unavailable', detail: 'PostgreSQL is unavailable' });
    }
  });
  await registerKeyedRoutes(app, deps.serviceKeys, { callers: deps.callers ?? BANKING_CALLERS }, (r) => {
    r.get('/banking/adapters', { schema: { response: { 200: AdaptersSchema } } }, async () => ({
      adapters: [...deps.adapters.values()].map((a) => ({ id: a.id, name: a.name, protocol: a.protocol })),
    }));
    registerConsentRoutes(r, reads);
    registerAccountRoutes(r, reads);
  });
  return app;
}

/** The consent asked for, with the defaults filled in (400 when it contradicts itself). */
function consentRequest(body: Static<typeof ConsentBody>) {
  const request = {
    access: body.access ?? { allPsd2: 'allAccounts' },
    recurringIndicator: body.recurringIndicator ?? true,
    validUntil: body.validUntil ?? day(new Date(Date.now() + 90 * 86_400_000)),
    frequencyPerDay: body.frequencyPerDay ?? (body.recurringIndicator === false ? 1 : 4),
  };
  if (request.validUntil < day(new Date()))
    throw new AppError('BAD_REQUEST', `validUntil (${request.validUntil}) lies in the past.`);
  if (!request.recurringIndicator && request.frequencyPerDay !== 1)
    throw new AppError('BAD_REQUEST', 'A one-off consent (recurringIndicator false) has frequencyPerDay 1.');
  return request;
}

function registerConsentRoutes(r: KeyedRoutes, reads: ConsentReads) {
  const { consents } = reads;
  r.post(
    '/banking/:bankId/consent',
    {
      schema: {
        headers: WorkspaceHeaders,
        params: Type.Object({ bankId: BankIdParam }),
        body: ConsentBody,
        response: { 201: ConsentSchema },
      },
    },
    async (req, reply) => {
      const bank = reads.adapter(req.params.bankId);
      const body: Static<typeof ConsentBody> = req.body ?? {};
      const request = consentRequest(body);
      const created = await bank.createConsent(request, {
        ipAddress: req.headers['x-psu-ip-address'] ?? req.ip,
        redirectUrl: body.redirectUrl,
      });
      const consent = await consents.insert(req.headers['x-workspace-id'], bank.id, request, created);
      req.log.info(
        { workspaceId: req.headers['x-workspace-id'], bankId: bank.id, consentId: consent.consentId },
        'consent created',
      );
      return reply.code(201).send(publicConsent(consent));
    },
  );

  r.get(
    '/banking/:bankId/consent/:consentId',
    {
      schema: {
        headers: WorkspaceHeaders,
        params: Type.Object({ bankId: BankIdParam, consentId: Type.String({ maxLength: 100 }) }),
        response: { 200: ConsentSchema },
      },
    },
    async (req) => {
      const bank = reads.adapter(req.params.bankId);
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
}

function registerAccountRoutes(r: KeyedRoutes, reads: ConsentReads) {
  r.get(
    '/banking/:bankId/accounts',
    { schema: { headers: WorkspaceHeaders, params: Type.Object({ bankId: BankIdParam }), querystring: ConsentQuery } },
    async (req) =>
      reads.withConsent(req.headers['x-workspace-id'], req.params.bankId, req.query.consentId, (bank, id) =>
        bank.accounts(id),
      ),
  );

  r.get(
    '/banking/:bankId/accounts/:accountId/balance',
    {
      schema: {
        headers: WorkspaceHeaders,
        params: Type.Object({ bankId: BankIdParam, accountId: AccountIdParam }),
        querystring: ConsentQuery,
      },
    },
    async (req) =>
      reads.withConsent(req.headers['x-workspace-id'], req.params.bankId, req.query.consentId, (bank, id) =>
        bank.balances(id, req.params.accountId),
      ),
  );

  r.get(
    '/banking/:bankId/accounts/:accountId/transactions',
    {
      schema: {
        headers: WorkspaceHeaders,
        params: Type.Object({ bankId: BankIdParam, accountId: AccountIdParam }),
        querystring: TransactionsQuery,
      },
    },
    async (req) => {
      const { consentId, bookingStatus = 'booked', dateFrom, dateTo } = req.query;
      if (dateFrom && dateTo && dateFrom > dateTo)
        throw new AppError('BAD_REQUEST', `dateFrom (${dateFrom}) lies after dateTo (${dateTo}).`);
      return reads.withConsent(req.headers['x-workspace-id'], req.params.bankId, consentId, (bank, id) =>
        bank.transactions(id, req.params.accountId, { bookingStatus, dateFrom, dateTo }),
      );
    },
  );
}
