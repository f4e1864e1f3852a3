/**
 * Keeps a TenantClient's composed objects (composed-manifests.ts) on the Kubernetes API: each
 * reconcile reads each object the workflow's published status says is due (from the informers' cache, object-cache.ts);
 * one missing is made (again: a deleted one comes back on the next reconcile, with an Event), one
 * made from an older revision is replaced. Each answers its
 * own Synced state for `status.objects`. A Secret's data never goes into a status, Event or log.
 */
import { ApiException, type KubernetesObject, type KubernetesObjectApi } from '@kubernetes/client-node';
import { loadErpApiCredentials, type ErpApiCredentialVersion } from '../../domain/erp/api-user.js';
import type { ComposedObjectState, TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import type { OperationDeps } from '../../domain/tenants/operator-actions.js';
import { routeNamespace, type ErpVersion, type TenantStatus } from '../../domain/tenants/types.js';
import {
  ERP_SERVICE,
  REVISION_ANNOTATION,
  apiUserSecret,
  apiUserSecretName,
  routeIngress,
  routeObjectName,
} from './composed-manifests.js';
import type { ComposedObjectCache } from './object-cache.js';

export type KeptObjectKey = 'route' | 'apiUserSecret';
const FIELD_MANAGER = 'tenant-controller';

/** One composed object as the pass wants it: where, its revision, and how to make it (read lazily). */
interface ObjectPlan {
  key: KeptObjectKey;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  revision: string;
  message: string;
  build(): Promise<KubernetesObject>;
}

export interface KeptObject {
  key: KeptObjectKey;
  state: ComposedObjectState;
  /** It had been made and was found gone: made again. */
  recreated: boolean;
}

/** The objects due for a TenantClient, from what its workflow's published status says is in place. */
export function plannedObjects(
  deps: OperationDeps,
  obj: TenantClientObject,
  published: TenantStatus,
  credentials: ErpApiCredentialVersion | undefined,
): ObjectPlan[] {
  const tenant = obj.metadata.name;
  const namespace = routeNamespace(String(obj.spec.erpVersion ?? '18') as ErpVersion);
  const { resources } = published;
  const plans: ObjectPlan[] = [];
  const route = resources.route;
  if (route?.state === 'Created') {
    const host = route.externalName.split('/').at(-1)!;
    const database = resources.database?.externalName ?? host;
    const revision = `${host} → ${ERP_SERVICE.name}:${ERP_SERVICE.port} (${database})`;
    plans.push({
      key: 'route',
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      namespace,
      name: routeObjectName(tenant),
      revision,
      message: `${host} → Service ${ERP_SERVICE.name}:${ERP_SERVICE.port}`,
      build: () => Promise.resolve(routeIngress(obj, { namespace, host, database, revision })),
    });
  }
  if (resources.apiUser?.state === 'Created' && credentials) {
    const revision = `${credentials.login}; API key until ${credentials.apiKeyExpiresAt?.toISOString() ?? 'none'}`;
    plans.push({
      key: 'apiUserSecret',
      apiVersion: 'v1',
      kind: 'Secret',
      namespace,
      name: apiUserSecretName(tenant),
      revision,
      message: `the credentials of the ERP API user ${credentials.login}`,
      build: async () => {
        const c = await loadErpApiCredentials(deps.pool, deps.config.SECRETS_KEY, tenant);
        if (!c) throw new Error(`no credentials stored for the ERP API user of ${tenant}`);
        return apiUserSecret(obj, { namespace, revision, ...c });
      },
    });
  }
  return plans;
}

/** Reads the object; makes it when missing, replaces it when made from another revision. */
export async function keepObject(
  api: KubernetesObjectApi,
  cache: ComposedObjectCache,
  recorded: ComposedObjectState | undefined,
  plan: ObjectPlan,
): Promise<KeptObject> {
  const { key, apiVersion, kind, namespace, name } = plan;
  const base = { apiVersion, kind, namespace, name };
  try {
    const found = await cache.read(base);
    if (found?.metadata?.annotations?.[REVISION_ANNOTATION] === plan.revision)
      return {
        key,
        state: { ...base, uid: found.metadata.uid, synced: 'True', message: plan.message },
        recreated: false,
      };
    const body = await plan.build();
    if (!found) {
      const made = await cache.create(base, body);
      const recreated = recorded?.uid !== undefined && recorded.uid !== made.metadata?.uid;
      return { key, state: { ...base, uid: made.metadata?.uid, synced: 'True', message: plan.message }, recreated };
    }
    const made = await api.replace(
      { ...body, metadata: { ...body.metadata, resourceVersion: found.metadata?.resourceVersion } },
      undefined,
      undefined,
      FIELD_MANAGER,
    );
    cache.noteMade(base, made);
    return {
      key,
      state: { ...base, uid: made.metadata?.uid, synced: 'True', message: plan.message },
      recreated: false,
    };
  } catch (err) {
    const message = `cannot keep the ${kind}: ${apiMessage(err)}`;
    return { key, state: { ...base, uid: recorded?.uid, synced: 'False', message }, recreated: false };
  }
}

/** Deletes the composed objects (a cluster's garbage collector would, through the owner references). */
export async function deleteKeptObjects(api: KubernetesObjectApi, obj: TenantClientObject): Promise<void> {
  const tenant = obj.metadata.name;
  const namespace = routeNamespace(String(obj.spec.erpVersion ?? '18') as ErpVersion);
  const objects = [
    { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { namespace, name: routeObjectName(tenant) } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { namespace, name: apiUserSecretName(tenant) } },
  ];
  for (const o of objects) {
    try {
      await api.delete(o, undefined, undefined, undefined, undefined, 'Background');
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    }
  }
}

/** The API server's own message (never the object sent: a Secret's data stays out of it). */
export function apiMessage(err: unknown): string {
  if (!(err instanceof ApiException)) return (err as Error).message;
  try {
    const body = typeof err.body === 'string' ? (JSON.parse(err.body) as { message?: string }) : undefined;
    return `${err.code}: ${body?.message ?? 'the API server refused it'}`;
  } catch {
    return `${err.code}: the API server refused it`;
  }
}
