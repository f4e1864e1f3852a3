/**
 * The ops API for TenantClients, guarded by the ops service key: list and get (the workflow's live
 * status) and the support actions (cancel, reactivate, retry the chat room), each answering its
 * workflow id and Temporal UI link. A TenantClient is created, changed and deleted on the
 * Kubernetes API only (kubectl, or the CLI's apply/delete; services/tenant-controller).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { temporalUiLink } from '../../../lib/temporal.js';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import {
  getTenantClient,
  getTenantClientSummary,
  listTenantClients,
  runTenantAction,
  type TenantAction,
} from '../../../domain/tenants/operator-actions.js';
import { TenantName } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

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

const problems = {
  400: Type.Ref('Problem'),
  401: Type.Ref('Problem'),
  404: Type.Ref('Problem'),
  409: Type.Ref('Problem'),
};

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
    summary:
      'Stop the soak timer of a cancelled tenant; everything stays. 409 once its TenantClient was deleted (kubectl delete): a deletion is not taken back',
  },
  {
    method: 'post',
    url: '/api/ops/tenant-clients/:name/retry-chat-room',
    action: 'retry-chat-room',
    summary: 'Create the support chat room again on the next reconcile',
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
