/**
 * Ops API: import a bank account's booked transactions into the tenant's ERP as bank statement
 * lines (`npm run cli -- bank-import <tenant> <bankId> <accountId>`; domain/banking/erp-import.ts).
 * Idempotent per transaction: running it again imports only what is new. Guarded by the operator's
 * service key.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';
import { importBookedTransactions } from '../../../domain/banking/erp-import.js';
import { bankingClientOf } from '../banking/index.js';
import { AccountIdParam, BankIdParam, IsoDate } from '../../../domain/banking/schemas.js';

export default async function opsBankImportRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/ops/banking/import',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary:
          "Import a bank account's booked transactions into the tenant ERP as bank statement lines (idempotent per transaction)",
        body: Type.Object(
          {
            tenant: TenantName,
            bankId: BankIdParam,
            accountId: AccountIdParam,
            dateFrom: Type.Optional(IsoDate),
            dateTo: Type.Optional(IsoDate),
            consentId: Type.Optional(Type.String({ format: 'uuid' })),
            journalId: Type.Optional(Type.Integer({ minimum: 1 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            tenant: Type.String(),
            bankId: Type.String(),
            accountId: Type.String(),
            journalId: Type.Integer(),
            booked: Type.Integer({ description: 'booked transactions the bank listed' }),
            imported: Type.Integer({ description: 'new bank statement lines' }),
            skipped: Type.Integer({ description: 'already in the ERP' }),
          }),
          404: Type.Ref('Problem'),
          409: Type.Ref('Problem'),
          502: Type.Ref('Problem'),
          503: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const result = await importBookedTransactions(
        { pool: app.deps.pool, config: app.deps.config, banking: bankingClientOf(app) },
        req.body,
      );
      req.log.info(
        { tenant: result.tenant, bankId: result.bankId, imported: result.imported, skipped: result.skipped },
        'bank transactions imported',
      );
      return result;
    },
  );
}
