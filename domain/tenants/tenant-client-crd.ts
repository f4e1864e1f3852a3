/**
 * The TenantClient as a Kubernetes custom resource: its CustomResourceDefinition (group plana.dev,
 * version v1alpha1, cluster-scoped, short name `tc`). The rules are those of the zod schema in
 * tenant-client.ts, written as a structural OpenAPI schema the API server enforces itself; the
 * messages are the zod schema's (`x-kubernetes-validations`), so `kubectl apply` and the CLI say the
 * same thing. test/integration/kubernetes/tenant-client-crd.test.ts keeps the two in step: every
 * case of its table is refused or accepted by both.
 */
import { CONTROL_CHARACTERS_MESSAGE, MAX_NAME_LENGTH, NAME_MESSAGES } from './tenant-client.js';
import { erpVersions, resourceKinds, TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, tiers } from './types.js';

export const TENANT_CLIENT_GROUP = TENANT_CLIENT_API_VERSION.split('/')[0]!;
export const TENANT_CLIENT_VERSION = TENANT_CLIENT_API_VERSION.split('/')[1]!;
export const TENANT_CLIENT_PLURAL = 'tenantclients';
export const TENANT_CLIENT_CRD_NAME = `${TENANT_CLIENT_PLURAL}.${TENANT_CLIENT_GROUP}`;
/** The finalizer the controller holds until the tenant is deprovisioned. */
export const TENANT_CLIENT_FINALIZER = `${TENANT_CLIENT_GROUP}/deprovision`;

/** RE2 (the API server's) form of a DNS label: no look-ahead there. */
const DNS_LABEL = '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$';
const EMAIL = '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$';
type Schema = Record<string, unknown>;

const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The tenant-name rules, with the CLI's messages (spec.subdomain and metadata.name). */
const nameRules = [
  { rule: 'size(self) > 0', message: NAME_MESSAGES.empty },
  { rule: `size(self) <= ${MAX_NAME_LENGTH}`, message: NAME_MESSAGES.tooLong },
  { rule: `self.matches('^[a-z0-9-]+$')`, message: NAME_MESSAGES.charset },
  // one message per mistake: the hyphen rule speaks only once the characters are right
  { rule: `!self.matches('^[a-z0-9-]+$') || self.matches(${celString(DNS_LABEL)})`, message: NAME_MESSAGES.hyphen },
];

/** Refuses control characters (RE2's \p{Cc}), as the zod schema does: PostgreSQL cannot store U+0000. */
const printable = { rule: `!self.matches('\\\\p{Cc}')`, message: CONTROL_CHARACTERS_MESSAGE };

const nameSchema = (description: string): Schema => ({
  type: 'string',
  description,
  'x-kubernetes-validations': nameRules,
  // bounds the cost of the rules above (the API server estimates it from maxLength)
  maxLength: 253,
});

const conditionSchema: Schema = {
  type: 'object',
  required: ['type', 'status'],
  properties: {
    type: { type: 'string', enum: ['Synced', 'Ready'] },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    reason: { type: 'string' },
    message: { type: 'string' },
    observedGeneration: { type: 'integer', format: 'int64' },
    lastTransitionTime: { type: 'string', format: 'date-time' },
  },
};

const resourceStateSchema: Schema = {
  type: 'object',
  properties: {
    externalName: { type: 'string' },
    synced: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    state: { type: 'string' },
    message: { type: 'string' },
    lastTransitionTime: { type: 'string', format: 'date-time' },
  },
};

const specSchema: Schema = {
  type: 'object',
  required: ['subdomain', 'projectId', 'tier', 'ownerEmail', 'ownerName'],
  properties: {
    subdomain: nameSchema(
      'The tenant name (= workspace slug): a DNS label of at most 30 characters, equal to metadata.name.',
    ),
    projectId: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      maximum: 2_147_483_647,
      description: 'The support chat room is support-<subdomain>-<projectId padded to 6 digits>.',
      'x-kubernetes-validations': [
        {
          rule: 'self == oldSelf',
          message: 'cannot change once applied: the chat room and the portal entry are keyed by it',
        },
      ],
    },
    tier: { type: 'string', enum: [...tiers], description: 'starter | pro | enterprise' },
    erpVersion: {
      type: 'string',
      enum: [...erpVersions],
      maxLength: 2,
      default: '18',
      description: '"17" (legacy) | "18" (default) | "19" (limited release); a change is a migration, not an apply.',
      'x-kubernetes-validations': [
        {
          rule: 'self == oldSelf',
          messageExpression: `'cannot change from "' + oldSelf + '" to "' + self + '": an ERP upgrade is a migration, not an apply'`,
        },
      ],
    },
    ownerEmail: {
      type: 'string',
      maxLength: 320,
      'x-kubernetes-validations': [
        printable,
        { rule: `self.matches(${celString(EMAIL)})`, message: 'must be an e-mail address such as owner@example.com' },
      ],
    },
    ownerName: {
      type: 'string',
      maxLength: 200,
      'x-kubernetes-validations': [
        { rule: 'size(self) > 0', message: 'must not be empty' },
        printable,
        { rule: `self.matches('\\\\S')`, message: 'must not be blank' },
      ],
    },
  },
};

/** A composed object the controller keeps on the Kubernetes API, owned by the TenantClient. */
const composedObjectSchema: Schema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    namespace: { type: 'string' },
    name: { type: 'string' },
    uid: { type: 'string' },
    synced: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    message: { type: 'string' },
  },
};

/** The composed objects on the Kubernetes API, owned by the TenantClient: its route (Ingress) and ERP API user's credentials (Secret). */
export const composedObjectKeys = ['route', 'apiUserSecret'] as const;
export type ComposedObjectKey = (typeof composedObjectKeys)[number];

const statusSchema: Schema = {
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64' },
    phase: { type: 'string' },
    conditions: {
      type: 'array',
      items: conditionSchema,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
    resources: {
      type: 'object',
      description: `The composed resources (${resourceKinds.join(', ')}), each with its own Synced state.`,
      properties: Object.fromEntries(resourceKinds.map((k) => [k, resourceStateSchema])),
    },
    objects: {
      type: 'object',
      description:
        "The composed objects on the Kubernetes API, in namespace plana-odoo-<erpVersion>, owned by this TenantClient, each with its own Synced state: route (the Ingress of its host) and apiUserSecret (the Secret with the ERP API user's credentials). A deleted one is made again by the next reconcile.",
      properties: Object.fromEntries(composedObjectKeys.map((k) => [k, composedObjectSchema])),
    },
    currentStep: { type: 'string' },
    workflowId: { type: 'string' },
    temporalUiUrl: { type: 'string' },
    traceId: {
      type: 'string',
      description: 'The trace of the newest apply, from the reconcile that applied it to Ready.',
    },
    traceUrl: { type: 'string', description: "That trace in the trace store's UI." },
    readyAt: { type: 'string', format: 'date-time' },
    cancelledAt: { type: 'string', format: 'date-time' },
    deprovisionAt: { type: 'string', format: 'date-time' },
    deprovisionedAt: { type: 'string', format: 'date-time' },
    /** The newest workflow step already published as an Event (so a restarted controller repeats none). */
    lastEventStepAt: { type: 'string', format: 'date-time' },
  },
};

const column = (name: string, jsonPath: string, type = 'string', priority?: number) => ({
  name,
  type,
  jsonPath,
  ...(priority ? { priority } : {}),
});

/** The CustomResourceDefinition (apiextensions.k8s.io/v1) of TenantClient. */
export function tenantClientCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: TENANT_CLIENT_CRD_NAME },
    spec: {
      group: TENANT_CLIENT_GROUP,
      scope: 'Cluster',
      names: {
        plural: TENANT_CLIENT_PLURAL,
        singular: 'tenantclient',
        kind: TENANT_CLIENT_KIND,
        listKind: `${TENANT_CLIENT_KIND}List`,
        shortNames: ['tc'],
        categories: ['plana'],
      },
      versions: [
        {
          name: TENANT_CLIENT_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            column('SYNCED', ".status.conditions[?(@.type=='Synced')].status"),
            column('READY', ".status.conditions[?(@.type=='Ready')].status"),
            column('TIER', '.spec.tier'),
            column('VERSION', '.spec.erpVersion'),
            column('PHASE', '.status.phase', 'string', 1),
            column('REASON', ".status.conditions[?(@.type=='Ready')].reason", 'string', 1),
            column('AGE', '.metadata.creationTimestamp', 'date'),
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description:
                'A tenant of the platform (§2.3): its ERP database, route, filestore, backups and chat room.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                // the API server's own check of a name (a DNS subdomain) speaks in regex words; these say the CLI's
                metadata: {
                  type: 'object',
                  properties: { name: { type: 'string', 'x-kubernetes-validations': nameRules } },
                },
                spec: specSchema,
                status: statusSchema,
              },
              'x-kubernetes-validations': [
                {
                  // compared only when the subdomain is a valid name, so one mistake gets one message
                  rule: `!self.spec.subdomain.matches(${celString(DNS_LABEL)}) || self.spec.subdomain == self.metadata.name`,
                  message: 'spec.subdomain must equal metadata.name',
                  fieldPath: '.spec.subdomain',
                },
              ],
            },
          },
        },
      ],
    },
  };
}
