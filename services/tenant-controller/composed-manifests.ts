/**
 * The composed objects of a TenantClient on the Kubernetes API, as manifests, each in the namespace
 * of the tenant's ERP version (plana-odoo-<erpVersion>) and owned by its TenantClient:
 * - route: a networking.k8s.io/v1 Ingress, the tenant's host → that version's ERP Service;
 * - backupSchedule: a batch/v1 CronJob, suspended (the Temporal schedule runs the backups), with
 *   that schedule's interval and the tier's retention, annotated with the Temporal schedule's id;
 * - apiUserSecret: the Secret with the ERP API user's credentials.
 * The platform executes the steps; these are what an operator sees, deletes and RBAC governs.
 */
import type { KubernetesObject, V1CronJob, V1Ingress, V1Secret } from '@kubernetes/client-node';
import type { TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND } from '../../domain/tenants/types.js';

/** The ERP Service of each version namespace (the Odoo of that version), which the Ingress routes to. */
export const ERP_SERVICE = { name: 'odoo', port: 8069 } as const;
/** Set on each object: what it was made from (a change makes the next pass replace it). */
export const REVISION_ANNOTATION = 'plana.dev/revision';

export const routeObjectName = (tenant: string) => `tenant-${tenant}`;
export const backupCronJobName = (tenant: string) => `backup-${tenant}`;
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

export interface BackupScheduleShape {
  namespace: string;
  scheduleId: string;
  everyMs: number;
  retentionDays: number;
  revision: string;
}

export function backupCronJob(owner: TenantClientObject, s: BackupScheduleShape): V1CronJob {
  const labels = { 'plana.dev/tenant': owner.metadata.name, 'plana.dev/resource': 'backupSchedule' };
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: composedMetadata(owner, 'backupSchedule', {
      name: backupCronJobName(owner.metadata.name),
      namespace: s.namespace,
      revision: s.revision,
      annotations: {
        'plana.dev/temporal-schedule-id': s.scheduleId,
        'plana.dev/interval': formatInterval(s.everyMs),
        'plana.dev/retention-days': String(s.retentionDays),
      },
    }),
    spec: {
      schedule: cronFor(s.everyMs),
      // the Temporal schedule runs the backups: no Job is ever started from this CronJob
      suspend: true,
      concurrencyPolicy: 'Forbid',
      jobTemplate: {
        metadata: { labels },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels },
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'backup', image: 'plana/platform:latest', command: ['true'] }],
            },
          },
        },
      },
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

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The cron schedule nearest to a Temporal interval: every d days, every h hours (h dividing 24),
 * every m minutes (m dividing 60); the exact interval is the `plana.dev/interval` annotation.
 */
export function cronFor(everyMs: number): string {
  if (everyMs >= DAY && everyMs % DAY === 0) return everyMs === DAY ? '0 0 * * *' : `0 0 */${everyMs / DAY} * *`;
  const hours = Math.round(everyMs / HOUR);
  if (everyMs >= HOUR && 24 % hours === 0) return hours === 1 ? '0 * * * *' : `0 */${hours} * * *`;
  const minutes = Math.max(1, Math.round(everyMs / MINUTE));
  if (minutes < 60 && 60 % minutes === 0) return minutes === 1 ? '* * * * *' : `*/${minutes} * * * *`;
  return '0 * * * *';
}

function formatInterval(ms: number): string {
  for (const [unit, size] of [
    ['d', DAY],
    ['h', HOUR],
    ['m', MINUTE],
  ] as const)
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms / 1000}s`;
}
