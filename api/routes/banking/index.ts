/**
 * The banking endpoints of the Workspace API (specification §4.1, §5.3): PSD2 consents, accounts,
 * balances and transactions of the key's own workspace, served by the banking service (§4.2) over
 * HTTP with the account API's service key (domain/banking/client.ts). Scope `banking:read`; key
 * verification, limits and the execution log come from the workspace-auth plugin. The workspace is
 * the key's: a consent of another workspace is not found (404).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { BankingClient } from '../../../domain/banking/client.js';
import {
  AccountIdParam,
  AdaptersSchema,
  BankIdParam,
  ConsentBody,
  ConsentQuery,
  ConsentSchema,
  TransactionsQuery,
} from '../../../domain/banking/schemas.js';

const errors = {
  404: Type.Ref('Problem'),
  409: Type.Ref('Problem'),
  502: Type.Ref('Problem'),
  503: Type.Ref('Problem'),
};
const key = { access: access.key('banking:read') };
const Bank = Type.Object({ bankId: BankIdParam });
const BankAccount = Type.Object({ bankId: BankIdParam, id: AccountIdParam });
const ConsentParams = Type.Object({ bankId: BankIdParam, consentId: Type.String({ format: 'uuid' }) });
const AccountData = Type.Record(Type.String(), Type.Unknown(), {
  description: "The bank's NextGenPSD2 answer (amounts as { currency, amount: string })",
});

const clients = new WeakMap<object, BankingClient>();
/** The app's one client of the banking service (given in deps, or made with the secret store). */
export function bankingClientOf(app: FastifyInstance): BankingClient {
  const { config } = app.deps;
  let client = app.deps.bankingClient ?? clients.get(app.deps);
  if (!client) {
    client = new BankingClient(config.BANKING_URL, app.serviceKeySecrets, config.BANKING_SERVICE_TIMEOUT_MS);
    clients.set(app.deps, client);
  }
  return client;
}

export default async function bankingRoutes(fastify: FastifyInstance) {
  const banking = bankingClientOf(fastify);
  adaptersRoute(fastify, banking);
  requestConsentRoute(fastify, banking);
  consentRoute(fastify, banking);
  accountsRoute(fastify, banking);
  transactionsRoute(fastify, banking);
  balanceRoute(fastify, banking);
}

function adaptersRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/banking/adapters',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'The banks the platform can read (one NextGenPSD2 adapter each)',
        response: { 200: AdaptersSchema, ...errors },
      },
    },
    async () => (await banking.call({ method: 'GET', path: '/banking/adapters' })).body as never,
  );
}

function requestConsentRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/banking/:bankId/consent',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'Ask the bank for a consent; the PSU completes SCA at scaRedirect',
        params: Bank,
        body: ConsentBody,
        response: { 201: ConsentSchema, ...errors },
      },
    },
    async (req, reply) => {
      const res = await banking.call({
        method: 'POST',
        path: `/banking/${req.params.bankId}/consent`,
        workspaceId: req.workspace!.id,
        body: req.body ?? {},
        psuIpAddress: req.ip,
      });
      return reply.code(201).send(res.body as never);
    },
  );
}

function consentRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/banking/:bankId/consent/:consentId',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'A consent and its status at the bank',
        params: ConsentParams,
        response: { 200: ConsentSchema, ...errors },
      },
    },
    async (req) =>
      (
        await banking.call({
          method: 'GET',
          path: `/banking/${req.params.bankId}/consent/${req.params.consentId}`,
          workspaceId: req.workspace!.id,
        })
      ).body as never,
  );
}

function accountsRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/banking/:bankId/accounts',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'The accounts the consent covers',
        params: Bank,
        querystring: ConsentQuery,
        response: { 200: AccountData, ...errors },
      },
    },
    async (req) =>
      (
        await banking.call({
          method: 'GET',
          path: `/banking/${req.params.bankId}/accounts`,
          workspaceId: req.workspace!.id,
          query: req.query,
        })
      ).body as never,
  );
}

function transactionsRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/banking/:bankId/accounts/:id/transactions',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'Transactions (booked, pending or both) in a date range',
        params: BankAccount,
        querystring: TransactionsQuery,
        response: { 200: AccountData, ...errors },
      },
    },
    async (req) =>
      (
        await banking.call({
          method: 'GET',
          path: `/banking/${req.params.bankId}/accounts/${encodeURIComponent(req.params.id)}/transactions`,
          workspaceId: req.workspace!.id,
          query: req.query,
        })
      ).body as never,
  );
}

function balanceRoute(fastify: FastifyInstance, banking: BankingClient) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/banking/:bankId/accounts/:id/balance',
    {
      config: key,
      schema: {
        tags: ['banking'],
        summary: 'Balances: closingBooked, expected, interimAvailable',
        params: BankAccount,
        querystring: ConsentQuery,
        response: { 200: AccountData, ...errors },
      },
    },
    async (req) =>
      (
        await banking.call({
          method: 'GET',
          path: `/banking/${req.params.bankId}/accounts/${encodeURIComponent(req.params.id)}/balance`,
          workspaceId: req.workspace!.id,
          query: req.query,
        })
      ).body as never,
  );
}
