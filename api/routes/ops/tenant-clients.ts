/**
 * The ops API for TenantClients, guarded by the ops service key: apply (JSON or YAML),
 * list, get (with the live status), and the lifecycle actions. The CLI calls exactly these.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../../lib/errors.js';
import { temporalUiLink } from '../../../lib/temporal.js';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import {
  parseTenantClient,
  problemsDetail,
  tenantClientJsonSchema,
  validateTenantClient,
} from '../../../domain/tenants/tenant-client.js';
import {
  applyTenantClient,
  getTenantClient,
  getTenantClientSummary,
  listTenantClients,
  runTenantAction,
  type TenantAction,
} from '../../../domain/tenants/operator-actions.js';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

/**
 * The body is validated by the handler (JSON or YAML text) with the domain's rules, which the
 * route's schema shows in their JSON Schema form (domain/tenants/tenant-client.ts).
 */
const handlerValidates = () => () => true;

const Summary = Type.Object({
  name: Type.String(),
  synced: Type.String(),
  ready: Type.String(),
  phase: Type.String(),
  generation: Type.Integer(),
  observedGeneration: Type.Integer(),
  createdAt: Type.String(),
});

const Condition = Type.Object({
  type: Type.Union([Type.Literal('Synced'), Type.Literal('Ready')]),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String({
    description: 'ReconcileSuccess / ReconcileError (Synced); Available / Creating / Unavailable / Deleting (Ready)',
  }),
  message: Type.String(),
  lastTransitionTime: Type.String(),
  observedGeneration: Type.Integer(),
});
const ResourceState = Type.Object({
  externalName: Type.String(),
  synced: Type.String(),
  state: Type.String({ description: 'Pending, Created, Failed, Deleted or Archived' }),
  message: Type.String(),
  lastTransitionTime: Type.String(),
});
/** What the lifecycle workflow reports (domain/tenants/types.ts TenantStatus); before its first report some parts are absent. */
const TenantStatus = Type.Object({
  name: Type.String(),
  generation: Type.Integer(),
  observedGeneration: Type.Integer(),
  phase: Type.String({ description: 'Provisioning, Ready, Unavailable, Cancelled, Deprovisioning or Deprovisioned' }),
  conditions: Type.Array(Condition),
  resources: Type.Record(Type.String(), ResourceState, {
    description: 'database, apiUser, route, filestore, backupSchedule, chatRoom, erpSignIn',
  }),
  steps: Type.Array(
    Type.Object({ step: Type.String(), at: Type.String(), outcome: Type.String(), message: Type.String() }),
  ),
  currentStep: Type.String(),
  readyAt: Type.Optional(Type.String()),
  cancelledAt: Type.Optional(Type.String()),
  deprovisionAt: Type.Optional(Type.String()),
  deprovisionedAt: Type.Optional(Type.String()),
  provisionedEventId: Type.Optional(Type.String()),
});
const TenantClientResource = Type.Object({
  apiVersion: Type.String(),
  kind: Type.String(),
  metadata: Type.Object({
    name: Type.String(),
    uid: Type.String(),
    generation: Type.Integer(),
    creationTimestamp: Type.String(),
  }),
  // as stored: plain types, so a resource applied under older, looser rules is still shown
  spec: Type.Object({
    subdomain: Type.String(),
    projectId: Type.Integer(),
    tier: Type.String(),
    erpVersion: Type.String(),
    ownerEmail: Type.String(),
    ownerName: Type.String(),
  }),
  status: TenantStatus,
  statusSource: Type.Union([Type.Literal('workflow'), Type.Literal('mirror')]),
  workflowId: Type.String(),
  temporalUiUrl: Type.String(),
});

/** The content types of a YAML TenantClient (application/json is every route's). */
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

const problems = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  409: Type.Ref('Problem'),
};

const Applied = Type.Object({
  result: Type.String(),
  name: Type.String(),
  generation: Type.Integer(),
  workflowId: Type.String(),
  temporalUiUrl: Type.String(),
});

/** The lifecycle actions: one route each, answering 202 with the status the action leaves. */
const tenantActions: { method: 'post' | 'delete'; url: string; action: TenantAction; summary: string }[] = [
  {
    method: 'post',
    url: '/api/ops/tenant-clients/:name/cancel',
    action: 'cancel',
    summary: 'The customer cancelled: start the soak timer (deprovisioning follows)',
  },
  {
    method: 'post',
    url: '/api/ops/tenant-clients/:name/reactivate',
    action: 'reactivate',
    summary: 'Stop the soak timer of a cancelled tenant; everything stays',
  },
  {
    method: 'post',
    url: '/api/ops/tenant-clients/:name/retry-chat-room',
    action: 'retry-chat-room',
    summary: 'Create the support chat room again on the next reconcile',
  },
  {
    method: 'delete',
    url: '/api/ops/tenant-clients/:name',
    action: 'delete',
    summary: 'Deprovision a cancelled tenant now instead of at the end of the soak period',
  },
];

function registerTenantActions(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  for (const { method, url, action, summary } of tenantActions) {
    app[method](
      url,
      {
        config: { access: access.service('operator') },
        schema: {
          tags: ['ops'],
          summary,
          params: Type.Object({ name: TenantName }),
          response: {
            202: Type.Object({
              name: Type.String(),
              action: Type.String(),
              status: TenantStatus,
              workflowId: Type.String(),
              temporalUiUrl: Type.String(),
            }),
            ...problems,
          },
        },
      },
      async (req, reply) => {
        const status = await runTenantAction(app.deps, req.params.name, action);
        req.log.info({ tenant: req.params.name, action }, 'TenantClient action accepted');
        const workflowId = tenantWorkflowId(req.params.name);
        const temporalUiUrl = temporalUiLink(app.deps.config, workflowId);
        return reply.code(202).send({ name: req.params.name, action, status, workflowId, temporalUiUrl });
      },
    );
  }
}

export default async function opsTenantClientRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // `kubectl apply`-style: the resource may come as YAML as well as JSON (any other type: a 415
  // that lists these)
  app.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.post(
    '/api/ops/tenant-clients',
    {
      config: { access: access.service('operator'), contentTypes: ['application/json', ...YAML_TYPES] },
      validatorCompiler: handlerValidates,
      schema: {
        tags: ['ops'],
        summary: 'Apply a TenantClient (create, or update its spec; the same spec again changes nothing)',
        description: `Body: the TenantClient resource as JSON, or as YAML (Content-Type ${YAML_TYPES.join(', ')}). A name is a DNS label; a deleted (deprovisioned) tenant's name cannot be applied again (409).`,
        body: tenantClientJsonSchema,
        response: {
          200: Applied,
          201: Applied,
          ...problems,
        },
      },
    },
    async (req, reply) => {
      // a YAML body arrives as its text
      const parsed = typeof req.body === 'string' ? parseTenantClient(req.body) : validateTenantClient(req.body);
      if (!parsed.ok) {
        throw new AppError('BAD_REQUEST', `Invalid TenantClient: ${problemsDetail(parsed.problems)}`, {
          errors: parsed.problems,
        });
      }
      const applied = await applyTenantClient(app.deps, parsed.value);
      req.log.info(
        { tenant: applied.name, result: applied.result, generation: applied.generation },
        'TenantClient applied',
      );
      return reply.code(applied.result === 'created' ? 201 : 200).send(applied);
    },
  );

  app.get(
    '/api/ops/tenant-clients',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'List TenantClients with their Synced and Ready conditions (as mirrored in PostgreSQL)',
        response: { 200: Type.Object({ items: Type.Array(Summary) }), 401: Type.Ref('Problem') },
      },
    },
    async () => ({ items: await listTenantClients(app.deps.pool) }),
  );

  app.get(
    '/api/ops/tenant-clients/:name',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'One TenantClient: spec, live status (conditions, resources, recent steps) and its Temporal UI link',
        params: Type.Object({ name: TenantName }),
        querystring: Type.Object({ view: Type.Optional(Type.Union([Type.Literal('summary'), Type.Literal('full')])) }),
        response: { 200: Type.Union([TenantClientResource, Summary]), ...problems },
      },
    },
    async (req) =>
      req.query.view === 'summary'
        ? getTenantClientSummary(app.deps.pool, req.params.name)
        : getTenantClient(app.deps, req.params.name),
  );

  registerTenantActions(fastify);
}
