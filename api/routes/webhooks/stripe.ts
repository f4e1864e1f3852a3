/**
 * POST /api/webhooks/stripe (§4.1 `POST /api/webhooks/<payment_provider>`): the payment provider's
 * events. Public in the sense that no platform credential is sent: every event must carry a valid
 * `Stripe-Signature` over the exact bytes received (the official `stripe` library's
 * `webhooks.constructEvent`, with the tolerance STRIPE_WEBHOOK_TOLERANCE_SECONDS), else 400 and it is
 * never looked at. Each event id is processed once (domain/billing/stripe-events.ts): a repeat gets
 * 200 with `duplicate: true` and changes nothing. A failure while processing answers 500, so
 * Stripe sends the event again; nothing of it is kept meanwhile.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { processStripeEvent, verifyStripeEvent, type BillingDeps } from '../../../domain/billing/stripe-events.js';
import { publishEvent } from '../../../domain/events/events.js';
import { TenantClientApi } from '../../../domain/tenants/tenant-client-api.js';
import { kubeCredentials } from '../../../lib/kube-config.js';
import { serviceKeyFor } from '../../../domain/service-keys/secret-store.js';
import { access } from '../../plugins/access.js';

/** The billing webhook receiver's service key for the events service (§5.4). */
export const BILLING_WEBHOOKS_CALLER = 'billing-webhooks';

/** The body's bytes, opaque to the platform's text checks (which walk parsed JSON, not a signature's input). */
class RawBody {
  readonly #bytes: Buffer;
  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }
  get bytes() {
    return this.#bytes;
  }
}

export default async function stripeWebhookRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool, temporal } = app.deps;
  // the signature covers the exact bytes: this route (and only it) gets the body unparsed
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) =>
    done(null, new RawBody(body as Buffer)),
  );

  const eventsKey = serviceKeyFor(app.serviceKeySecrets, BILLING_WEBHOOKS_CALLER, 'events');
  let tenantClients: TenantClientApi | undefined;
  const billing = (log: BillingDeps['log']): BillingDeps => ({
    pool,
    temporal,
    config,
    log,
    publish: async (event) => publishEvent({ eventsUrl: config.EVENTS_URL, apiKey: await eventsKey() }, event),
    // KUBECONFIG's credentials, else the pod's service account: read when a tier changes, not at start
    tenantClients: () => {
      if (tenantClients) return tenantClients;
      const { kubeConfig, source } = kubeCredentials(config.KUBECONFIG);
      return (tenantClients = new TenantClientApi(kubeConfig, source));
    },
  });

  app.post(
    '/api/webhooks/stripe',
    {
      config: { access: access.public },
      bodyLimit: 512 * 1024,
      schema: {
        tags: ['webhooks'],
        summary: 'Payment provider (Stripe) events: invoice.paid, invoice.payment_failed, customer.subscription.*',
        description:
          'Verified with the Stripe-Signature header over the raw body (the endpoint secret STRIPE_WEBHOOK_SECRET, a tolerance of STRIPE_WEBHOOK_TOLERANCE_SECONDS); a bad or stale signature is a 400. Each event id is processed once; a repeat answers 200 with duplicate true.',
        headers: Type.Object({ 'stripe-signature': Type.Optional(Type.String({ maxLength: 2000 })) }),
        response: {
          200: Type.Object({
            received: Type.Literal(true),
            id: Type.String(),
            duplicate: Type.Boolean(),
            outcome: Type.String(),
          }),
          400: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      const raw = req.body instanceof RawBody ? req.body.bytes : Buffer.alloc(0);
      const event = verifyStripeEvent(raw, req.headers['stripe-signature'], config);
      const result = await processStripeEvent(billing(req.log), event);
      req.log.info(
        { stripeEvent: event.id, type: event.type, duplicate: result.duplicate, outcome: result.outcome },
        'stripe event',
      );
      return { received: true as const, id: event.id, ...result };
    },
  );
}
