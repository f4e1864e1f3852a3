/**
 * GET /api/portal/subscription (§4.1): the workspace's plan as the payment provider last reported
 * it (domain/billing/subscriptions.ts), for any member logged in interactively; never for a key.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { getSubscription, SUBSCRIPTION_STATUSES } from '../../../domain/billing/subscriptions.js';
import { tiers } from '../../../domain/tenants/types.js';
import { access } from '../../plugins/access.js';
import { TenantName } from '../../schemas/common.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const SubscriptionSchema = Type.Object({
  workspace: Type.String(),
  tier: Type.Enum([...tiers]),
  status: Type.Enum([...SUBSCRIPTION_STATUSES], { description: "Stripe's subscription status" }),
  seats: Type.Integer(),
  currentPeriod: Nullable(
    Type.Object({ start: Type.String({ format: 'date-time' }), end: Type.String({ format: 'date-time' }) }),
  ),
  cancelAtPeriodEnd: Type.Boolean(),
  pastDueSince: Nullable(
    Type.String({ format: 'date-time', description: 'a payment failed and is not made good yet' }),
  ),
  suspendedAt: Nullable(
    Type.String({
      format: 'date-time',
      description: "the workspace's keys are refused (403 workspace-suspended) until payment",
    }),
  ),
  nextInvoice: Nullable(
    Type.Object({
      date: Type.String({ format: 'date-time' }),
      amountDue: Type.Integer({ description: "in the currency's smallest unit (cents): seats × price per seat" }),
      currency: Type.String({ description: 'ISO 4217, lower case' }),
    }),
  ),
  provider: Type.Object({
    name: Type.Literal('stripe'),
    customerId: Nullable(Type.String()),
    subscriptionId: Nullable(Type.String()),
  }),
});

export default async function subscriptionRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/portal/subscription',
    {
      config: { access: access.member },
      schema: {
        tags: ['billing'],
        summary: "The workspace's subscription: tier, status, period, seats and the next invoice (any member)",
        querystring: Type.Object({
          workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
        }),
        response: { 200: SubscriptionSchema, 404: Type.Ref('Problem') },
      },
    },
    async (req) => getSubscription(app.deps.pool, req.memberWorkspace!),
  );
}
