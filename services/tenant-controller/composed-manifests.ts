/**
 * The composed objects of a TenantClient on the Kubernetes API, as manifests, each in the namespace
 * of the tenant's ERP version (plana-odoo-<erpVersion>) and owned by its TenantClient:
 * - route: a networking.k8s.io/v1 Ingress, the tenant's host → that version's ERP Service;
 * - apiUserSecret: the Secret with the ERP API user's credentials.
 * Each does what its kind says on a cluster (the Ingress routes, the Secret holds the credentials);
 * what only Temporal does (backups, the chat room) has no object pretending to do it.
 */
import type { KubernetesObject, V1Ingress, V1Secret } from '@kubernetes/client-node';
import type { TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND } from '../../domain/tenants/types.js';

/** The ERP Service of each version namespace (the Odoo of that version), which the Ingress routes to. */
export const ERP_SERVICE = { name: 'odoo', port: 8069 } as const;
/** Set on each object: what it was made from (a change makes the next pass replace it). */
export const REVISION_ANNOTATION = 'plana.dev/revision';

export const routeObjectName = (tenant: string) => `tenant-${tenant}`;
export const apiUserSecretName = (tenant: string) => `erp-api-user-${tenant}`;

/** Labels, annotations and the owner reference every composed object carries. */
export function composedMetadata(
  owner: TenantClientObject,
  resource: string,
  object: { name: string; namespace: string; revision: string; annotations?: Record<string, string> },
): NonNullable<KubernetesObject['metadata']> {
  return {
    name: object.name,
    namespace: object.namespace,
    labels: {
      'app.kubernetes.io/part-of': 'plana',
      'app.kubernetes.io/managed-by': 'plana-tenant-controller',
      'plana.dev/tenant': owner.metadata.name,
      'plana.dev/resource': resource,
    },
    annotations: { ...object.annotations, [REVISION_ANNOTATION]: object.revision },
    ownerReferences: [
      {
        apiVersion: TENANT_CLIENT_API_VERSION,
        kind: TENANT_CLIENT_KIND,
        name: owner.metadata.name,
        uid: owner.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
}

export function routeIngress(
  owner: TenantClientObject,
  at: { namespace: string; host: string; database: string; revision: string },
): V1Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: composedMetadata(owner, 'route', {
      name: routeObjectName(owner.metadata.name),
      namespace: at.namespace,
      revision: at.revision,
      annotations: { 'plana.dev/database': at.database },
    }),
    spec: {
      rules: [
        {
          host: at.host,
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: ERP_SERVICE.name, port: { number: ERP_SERVICE.port } } },
              },
            ],
          },
        },
      ],
    },
  };
}

export function apiUserSecret(
  owner: TenantClientObject,
  s: { namespace: string; revision: string; login: string; password: string; apiKey: string | null },
): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: composedMetadata(owner, 'apiUserSecret', {
      name: apiUserSecretName(owner.metadata.name),
      namespace: s.namespace,
      revision: s.revision,
    }),
    type: 'kubernetes.io/basic-auth',
    stringData: { username: s.login, password: s.password, ...(s.apiKey ? { apiKey: s.apiKey } : {}) },
  };
}
