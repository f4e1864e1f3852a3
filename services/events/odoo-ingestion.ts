/**
 * Event ingestion from the tenant ERPs: what Odoo's automation rules post (domain/erp-events/automation-rules.ts):
 * the tenant's token as Basic auth, the event type in the path, `_model`, `_id` and the rule's fields
 * in the body. Odoo waits 1 s for the answer and never retries: this only checks, appends and answers.
 */
import type { FastifyBaseLogger } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../lib/errors.js';
import type { ServiceApp } from '../../lib/service-app.js';
import type { ServiceCallerIdentity } from '../../domain/service-keys/service-key-auth.js';
import {
  ERP_EVENT_TYPES,
  erpCloudEvent,
  odooChange,
  presentedToken,
  type ErpEventType,
  type OdooWebhookPayload,
} from '../../domain/erp-events/ingestion.js';
import type { EventPublisher, Published } from './publisher.js';

/**
 * The check of a tenant's token (made from a key of the `erp → event-ingestion` pair the registry
 * accepts: IngestionKeyRing) and a tenant's workspace slug (domain/erp-events/ingestion.ts).
 */
export interface ErpIngestion {
  /** The caller and key id when `token` is the tenant's under an accepted key; undefined otherwise. */
  authenticate(tenant: string, token: string): Promise<ServiceCallerIdentity | undefined>;
  workspaceOf(tenant: string): Promise<string | null | undefined>;
  /** Records the event as seen, so the catch-up sweep (domain/erp-events/sweep.ts) does not publish it again. */
  seen?(tenant: string, eventId: string): Promise<unknown>;
}

const PublishedSchema = Type.Object({ streamId: Type.String(), duplicate: Type.Boolean() });

export function registerOdooIngestion(app: ServiceApp, ingestion: ErpIngestion, publisher: EventPublisher): void {
  app.post(
    '/api/v1/ingest/odoo/:tenant/:type',
    {
      schema: {
        params: Type.Object({
          tenant: Type.String({ pattern: '^[a-z0-9-]{1,30}$' }),
          type: Type.Union(ERP_EVENT_TYPES.map((t) => Type.Literal(t))),
        }),
        body: Type.Object(
          {
            _model: Type.String({ minLength: 1, maxLength: 100 }),
            _id: Type.Integer({ minimum: 1 }),
            _action: Type.Optional(Type.String({ maxLength: 300 })),
          },
          { additionalProperties: true, maxProperties: 60 },
        ),
        response: { 202: PublishedSchema },
      },
    },
    async (req, reply) => {
      const { tenant, type } = req.params;
      const who = await authenticatedRule(ingestion, tenant, req.headers.authorization);
      const published = await ingestOdooChange(
        ingestion,
        publisher,
        { tenant, type: type as ErpEventType, body: req.body as OdooWebhookPayload },
        req.log,
      );
      req.log.info(
        {
          tenant,
          type,
          eventId: published.eventId,
          streamId: published.streamId,
          duplicate: published.duplicate,
          serviceCaller: who.caller,
          keyId: who.keyId,
        },
        'ERP event ingested',
      );
      return reply.code(202).send({ streamId: published.streamId, duplicate: published.duplicate });
    },
  );
}

/** Who posts: the tenant's rule, with a token under an accepted key (401 otherwise). */
async function authenticatedRule(
  ingestion: ErpIngestion,
  tenant: string,
  authorization: string | undefined,
): Promise<ServiceCallerIdentity> {
  const token = presentedToken(authorization);
  const who = token ? await ingestion.authenticate(tenant, token) : undefined;
  if (!who)
    throw new AppError(
      'UNAUTHORIZED',
      "This endpoint needs the tenant's ingestion token (Basic auth: the userinfo of the rule's URL).",
    );
  return who;
}

/** An Odoo change as a CloudEvent of the tenant's workspace, appended to the stream and recorded as seen. */
export async function ingestOdooChange(
  ingestion: ErpIngestion,
  publisher: EventPublisher,
  post: { tenant: string; type: ErpEventType; body: OdooWebhookPayload },
  log: FastifyBaseLogger,
): Promise<Published & { eventId: string }> {
  const { tenant, type } = post;
  const change = odooChange(type, post.body);
  if (typeof change === 'string') throw new AppError('BAD_REQUEST', `Not a ${type} change: ${change}.`);
  const workspace = await ingestion.workspaceOf(tenant);
  if (workspace === undefined) throw new AppError('NOT_FOUND', `No tenant "${tenant}".`);
  const published = await publisher.append(erpCloudEvent(tenant, workspace, change));
  // (a failure here only means the sweep publishes it again: the stream de-duplicates it)
  await ingestion
    .seen?.(tenant, change.id)
    .catch((err: Error) =>
      log.warn({ tenant, eventId: change.id, err: err.message }, 'ERP event not recorded as seen'),
    );
  return { ...published, eventId: change.id };
}
