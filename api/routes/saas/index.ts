/**
 * The account API side of the tenant ERPs' SaaS endpoints (§4.7). Each tenant host serves
 * `/svc/saas/…`; the tenant ingress in front of the ERP (services/tenant-ingress/saas.ts) forwards
 * those requests here with the tenant's name in the path, so every tenant answers from the
 * platform's own tier and subscription data:
 *
 * | tenant host                         | here                                          | who                                    |
 * |-------------------------------------|-----------------------------------------------|----------------------------------------|
 * | GET /svc/saas/tiers                 | GET /api/saas/:tenant/tiers                   | the ERP entry's key (erp → account-api) for a caller logged in to the tenant's ERP, or the caller's own erp / saas-jobs key |
 * | GET /svc/saas/tier/<code>/modules   | GET /api/saas/:tenant/tier/:code/modules      | same                                   |
 * | GET /svc/saas/subscription/<sub>    | GET /api/saas/:tenant/subscription/:sub       | same                                   |
 * | POST /svc/saas/job/<id>/update      | POST /api/saas/:tenant/job/:id/update         | the caller's key (saas-jobs → account-api), passed through |
 * | POST /svc/saas/backup/callback      | POST /api/saas/:tenant/backup/callback        | same                                   |
 *
 * The tenant's host is public: an anonymous caller there gets 401 from the forwarding
 * (services/tenant-ingress/saas.ts) and never reaches these routes.
 *
 * The callbacks are idempotent (domain/billing/saas.ts): the same report twice is kept once.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import {
  recordBackupCallback,
  recordJobUpdate,
  requireTenant,
  tenantSubscription,
} from '../../../domain/billing/saas.js';
import { TIERS, tierInfo } from '../../../domain/billing/tiers.js';
import { AppError } from '../../../lib/errors.js';
import { access } from '../../plugins/access.js';
import { TenantName, Text } from '../../schemas/common.js';
import { SubscriptionSchema } from '../portal/subscription.js';

const CallbackId = Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,80}$', maxLength: 80 });
const Module = Type.Object({ name: Type.String(), title: Type.String(), application: Type.Boolean() });
const JobState = Type.Union([
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('done'),
  Type.Literal('failed'),
]);

/** Who may read: the ERP entry's key for a caller logged in to the tenant's ERP, or an erp / saas-jobs key. */
const erp = { access: access.service('erp', 'saas-jobs') };
const TenantTiers = Type.Object({
  tenant: Type.String(),
  current: Type.String(),
  tiers: Type.Array(
    Type.Object({
      code: Type.String(),
      name: Type.String(),
      modules: Type.Integer(),
      current: Type.Boolean(),
    }),
  ),
});
const TierParams = Type.Object({ tenant: TenantName, code: Type.String({ pattern: '^[a-z]{1,30}$', maxLength: 30 }) });
const TierModules = Type.Object({ tier: Type.String(), name: Type.String(), modules: Type.Array(Module) });
const SubscriptionParams = Type.Object({
  tenant: TenantName,
  sub: Type.String({ pattern: '^sub_[A-Za-z0-9]{1,64}$', maxLength: 68 }),
});
const TenantSubscription = Type.Object({ ...SubscriptionSchema.properties, tenant: Type.String() });

export default async function saasRoutes(fastify: FastifyInstance) {
  tierReadRoutes(fastify);
  jobCallbackRoutes(fastify);
}

/** What a tenant ERP reads of its SaaS standing: the tiers, a tier's modules, its subscription. */
function tierReadRoutes(fastify: FastifyInstance) {
  tiersRoute(fastify);
  tierModulesRoute(fastify);
  subscriptionRoute(fastify);
}

function tiersRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/saas/:tenant/tiers',
    {
      config: erp,
      schema: {
        tags: ['saas'],
        summary: "Tenant ERP /svc/saas/tiers: the platform's tiers, and which one this tenant runs",
        params: Type.Object({ tenant: TenantName }),
        response: { 200: TenantTiers },
      },
    },
    async (req) => {
      const t = await requireTenant(pool, req.params.tenant);
      return {
        tenant: t.name,
        current: t.tier,
        tiers: TIERS.map((tier) => ({
          code: tier.code,
          name: tier.name,
          modules: tier.modules.length,
          current: tier.code === t.tier,
        })),
      };
    },
  );
}

function tierModulesRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/saas/:tenant/tier/:code/modules',
    {
      config: erp,
      schema: {
        tags: ['saas'],
        summary: 'Tenant ERP /svc/saas/tier/<code>/modules: the ERP modules of a tier',
        params: TierParams,
        response: { 200: TierModules },
      },
    },
    async (req) => {
      await requireTenant(pool, req.params.tenant);
      const tier = tierInfo(req.params.code);
      if (!tier)
        throw new AppError(
          'NOT_FOUND',
          `There is no tier "${req.params.code}"; the tiers are ${TIERS.map((t) => t.code).join(', ')}.`,
        );
      return { tier: tier.code, name: tier.name, modules: tier.modules };
    },
  );
}

function subscriptionRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/saas/:tenant/subscription/:sub',
    {
      config: erp,
      schema: {
        tags: ['saas'],
        summary: "Tenant ERP /svc/saas/subscription/<sub>: the tenant's subscription, by its provider id",
        params: SubscriptionParams,
        response: { 200: TenantSubscription },
      },
    },
    async (req) => tenantSubscription(pool, req.params.tenant, req.params.sub),
  );
}

/** The legacy callbacks of platform jobs: a job's progress, a backup's outcome. */
function jobCallbackRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const jobs = { access: access.service('saas-jobs') };

  app.post(
    '/api/saas/:tenant/job/:id/update',
    {
      config: jobs,
      schema: {
        tags: ['saas'],
        summary: 'Tenant ERP legacy callback /svc/saas/job/<id>/update: a job reports its state (idempotent)',
        params: Type.Object({ tenant: TenantName, id: CallbackId }),
        body: Type.Object(
          {
            state: JobState,
            progress: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
            message: Type.Optional(Text({ maxLength: 1000 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            tenant: Type.String(),
            job: Type.String(),
            state: JobState,
            progress: Type.Integer(),
            message: Type.String(),
            updates: Type.Integer({ description: 'how many reports changed the job' }),
            updatedAt: Type.String({ format: 'date-time' }),
            changed: Type.Boolean({
              description: 'false when this report was a repeat or older than what is recorded',
            }),
          }),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req) => recordJobUpdate(app.deps.pool, req.params.tenant, req.params.id, req.body),
  );

  app.post(
    '/api/saas/:tenant/backup/callback',
    {
      config: jobs,
      schema: {
        tags: ['saas'],
        summary: 'Tenant ERP legacy callback /svc/saas/backup/callback: a backup finished (idempotent per backup id)',
        params: Type.Object({ tenant: TenantName }),
        body: Type.Object(
          {
            backupId: CallbackId,
            status: Type.Union([Type.Literal('done'), Type.Literal('failed')]),
            sizeBytes: Type.Optional(Type.Integer({ minimum: 0 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            tenant: Type.String(),
            backupId: Type.String(),
            status: Type.String(),
            sizeBytes: Type.Union([Type.Integer(), Type.Null()]),
            receivedAt: Type.String({ format: 'date-time' }),
            duplicate: Type.Boolean(),
          }),
          409: Type.Ref('Problem'),
        },
      },
    },
    async (req) => recordBackupCallback(app.deps.pool, req.params.tenant, req.body),
  );
}
