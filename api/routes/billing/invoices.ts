/**
 * The workspace's invoices (§4.1 GET /api/billing/invoices, /api/billing/invoices/:id), as the
 * payment provider reported them: for the workspace's admins, logged in interactively (billing is
 * the admins' business; members see the plan at /api/portal/subscription). Newest first; pass the
 * last id of a page as `before` for the next.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { getInvoice, listInvoices } from '../../../domain/billing/subscriptions.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const InvoiceId = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,80}$',
  maxLength: 80,
  description: "the provider's invoice id (in_…)",
});
const WorkspaceQuery = {
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
};

const Invoice = Type.Object({
  id: Type.String(),
  number: Nullable(Type.String()),
  status: Type.Union([
    Type.Literal('draft'),
    Type.Literal('open'),
    Type.Literal('paid'),
    Type.Literal('uncollectible'),
    Type.Literal('void'),
  ]),
  currency: Type.String({ description: 'ISO 4217, lower case' }),
  amountDue: Type.Integer({ description: "in the currency's smallest unit (cents)" }),
  amountPaid: Type.Integer(),
  amountRemaining: Type.Integer(),
  period: Type.Object({
    start: Nullable(Type.String({ format: 'date-time' })),
    end: Nullable(Type.String({ format: 'date-time' })),
  }),
  hostedInvoiceUrl: Nullable(
    Type.String({ description: "the provider's page where the invoice can be seen and paid" }),
  ),
  invoicePdf: Nullable(Type.String({ description: 'the PDF of the invoice' })),
  attemptCount: Type.Integer({ description: 'payment attempts so far' }),
  nextPaymentAttempt: Nullable(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
});

export default async function invoiceRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/billing/invoices',
    {
      config: { access: access.admin },
      schema: {
        tags: ['billing'],
        summary: "The workspace's invoices, newest first (admins)",
        querystring: Type.Object({
          ...WorkspaceQuery,
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
          before: Type.Optional(InvoiceId),
        }),
        response: { 200: Type.Object({ items: Type.Array(Invoice) }) },
      },
    },
    async (req) => ({
      items: await listInvoices(app.deps.pool, req.adminWorkspace!.id, {
        limit: req.query.limit ?? 20,
        before: req.query.before,
      }),
    }),
  );

  app.get(
    '/api/billing/invoices/:id',
    {
      config: { access: access.admin },
      schema: {
        tags: ['billing'],
        summary: 'One invoice of the workspace: amounts, currency, status, period, hosted page and PDF (admins)',
        params: Type.Object({ id: InvoiceId }),
        querystring: Type.Object(WorkspaceQuery),
        response: { 200: Invoice, 404: Type.Ref('Problem') },
      },
    },
    async (req) => getInvoice(app.deps.pool, req.adminWorkspace!.id, req.params.id),
  );
}
