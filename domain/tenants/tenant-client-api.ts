/**
 * TenantClients on the Kubernetes API (tenantclients.plana.dev/v1alpha1): what `kubectl apply`,
 * `get`, `describe` and `delete` do, for the CLI and the tests. The API server validates each object
 * with the CRD's schema; the controller (services/tenant-controller) turns it into the workflow.
 */
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { AppError } from '../../lib/errors.js';
import { sameSpec } from './tenant-client.js';
import {
  TENANT_CLIENT_GROUP,
  TENANT_CLIENT_PLURAL,
  TENANT_CLIENT_VERSION,
  type ComposedObjectKey,
} from './tenant-client-crd.js';
import {
  TENANT_CLIENT_API_VERSION,
  TENANT_CLIENT_KIND,
  type Condition,
  type ResourceKind,
  type ResourceState,
  type TenantClientSpec,
} from './types.js';

export const tenantClientGvr = {
  group: TENANT_CLIENT_GROUP,
  version: TENANT_CLIENT_VERSION,
  plural: TENANT_CLIENT_PLURAL,
};

/** A composed object on the Kubernetes API, owned by the TenantClient, and whether it is in place. */
export interface ComposedObjectState {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Set once the object exists (a later pass that finds it gone knows it was deleted). */
  uid?: string;
  synced: 'True' | 'False';
  message: string;
}

/** The status subresource the controller writes. */
export interface KubeTenantStatus {
  observedGeneration?: number;
  phase?: string;
  conditions?: Condition[];
  resources?: Partial<Record<ResourceKind, ResourceState>>;
  objects?: Partial<Record<ComposedObjectKey, ComposedObjectState>>;
  currentStep?: string;
  workflowId?: string;
  temporalUiUrl?: string;
  /** The trace of the newest apply, from the controller's reconcile to Ready, and its link. */
  traceId?: string;
  traceUrl?: string;
  readyAt?: string;
  cancelledAt?: string;
  deprovisionAt?: string;
  deprovisionedAt?: string;
  lastEventStepAt?: string;
}

export interface TenantClientObject extends KubernetesObject {
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string; uid: string; generation: number };
  spec: Record<string, unknown>;
  status?: KubeTenantStatus;
}

/** What is applied: the resource as written (its labels kept, so a controller's selector sees them). */
export interface TenantClientManifest {
  metadata: { name: string; labels?: Record<string, string> };
  spec: TenantClientSpec;
}

export interface TenantClientEvent {
  type: string;
  reason: string;
  message: string;
  at: string;
}

export type KubeApplyResult = 'created' | 'configured' | 'unchanged';

/** One row of `get tenants`. */
export interface TenantClientRow {
  name: string;
  synced: string;
  ready: string;
  phase: string;
  createdAt: string;
}

export function tenantClientRow(obj: TenantClientObject): TenantClientRow {
  const status = (type: Condition['type']) => obj.status?.conditions?.find((c) => c.type === type)?.status ?? 'Unknown';
  return {
    name: obj.metadata.name,
    synced: status('Synced'),
    ready: status('Ready'),
    phase: obj.status?.phase ?? '',
    createdAt: String(obj.metadata.creationTimestamp ?? ''),
  };
}

const FIELD_MANAGER = 'plana';

export class TenantClientApi {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  /** `source` names where the credentials come from, for error messages. */
  constructor(
    kubeConfig: KubeConfig,
    private readonly source: string,
  ) {
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /**
   * Creates the TenantClient, or replaces its spec (and labels) when they differ, as `kubectl
   * apply` does; the same spec again is `unchanged`. A concurrent writer (409) makes it read again.
   */
  async apply(manifest: TenantClientManifest): Promise<{ result: KubeApplyResult; generation: number }> {
    const { name } = manifest.metadata;
    for (let attempt = 1; ; attempt++) {
      try {
        const current = await this.find(name);
        if (!current) {
          const created = (await this.custom.createClusterCustomObject({
            ...tenantClientGvr,
            body: { apiVersion: TENANT_CLIENT_API_VERSION, kind: TENANT_CLIENT_KIND, ...manifest },
            fieldManager: FIELD_MANAGER,
          })) as TenantClientObject;
          return { result: 'created', generation: created.metadata.generation };
        }
        if (current.metadata.deletionTimestamp)
          throw new AppError(
            'CONFLICT',
            `TenantClient "${name}" is being deleted (deprovisioning); apply it again once it is gone.`,
          );
        const labels = { ...current.metadata.labels, ...manifest.metadata.labels };
        const sameLabels = JSON.stringify(labels) === JSON.stringify(current.metadata.labels ?? {});
        if (sameLabels && sameSpec(current.spec as unknown as TenantClientSpec, manifest.spec))
          return { result: 'unchanged', generation: current.metadata.generation };
        const replaced = (await this.custom.replaceClusterCustomObject({
          ...tenantClientGvr,
          name,
          // the resourceVersion read: a write in between is a 409, and this reads again
          body: { ...current, metadata: { ...current.metadata, labels }, spec: manifest.spec },
          fieldManager: FIELD_MANAGER,
        })) as TenantClientObject;
        return { result: 'configured', generation: replaced.metadata.generation };
      } catch (err) {
        if (err instanceof ApiException && err.code === 409 && attempt < 5) continue;
        throw this.failure(err, name);
      }
    }
  }

  async list(labelSelector?: string): Promise<TenantClientObject[]> {
    try {
      const list = (await this.custom.listClusterCustomObject({
        ...tenantClientGvr,
        labelSelector,
      })) as KubernetesListObject<TenantClientObject>;
      return [...list.items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    } catch (err) {
      throw this.failure(err);
    }
  }

  /** The TenantClient, or a NOT_FOUND error naming it. */
  async get(name: string): Promise<TenantClientObject> {
    const found = await this.find(name).catch((err: unknown) => {
      throw this.failure(err, name);
    });
    if (!found) throw new AppError('NOT_FOUND', `TenantClient "${name}" does not exist.`);
    return found;
  }

  /** Asks for the deletion: the controller cancels the tenant and removes its finalizer once deprovisioned. */
  async delete(name: string): Promise<void> {
    try {
      await this.custom.deleteClusterCustomObject({ ...tenantClientGvr, name });
    } catch (err) {
      throw this.failure(err, name);
    }
  }

  /** The Events recorded on the TenantClient (cluster-scoped objects' Events live in `default`), oldest first. */
  async events(name: string): Promise<TenantClientEvent[]> {
    try {
      const list = await this.core.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `involvedObject.kind=${TENANT_CLIENT_KIND},involvedObject.name=${name}`,
      });
      // Event times have whole seconds: within one second, the order they were recorded in (the
      // controller records a workflow's steps in order; etcd's revision grows with each write)
      const revision = (e: { metadata?: { resourceVersion?: string } }) => Number(e.metadata?.resourceVersion ?? 0);
      const time = (e: (typeof list.items)[number]) =>
        new Date(e.lastTimestamp ?? e.firstTimestamp ?? e.eventTime ?? 0).getTime();
      return [...list.items]
        .sort((a, b) => time(a) - time(b) || revision(a) - revision(b))
        .map((e) => ({
          type: e.type ?? '',
          reason: e.reason ?? '',
          message: e.message ?? '',
          at: new Date(time(e)).toISOString(),
        }));
    } catch (err) {
      throw this.failure(err, name);
    }
  }

  private async find(name: string): Promise<TenantClientObject | undefined> {
    try {
      return (await this.custom.getClusterCustomObject({ ...tenantClientGvr, name })) as TenantClientObject;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      throw err;
    }
  }

  /** The API server's answer in the caller's terms: its own message (a schema refusal says which field). */
  private failure(err: unknown, name?: string): Error {
    if (err instanceof AppError) return err;
    if (err instanceof ApiException) {
      const message = apiMessage(err);
      if (err.code === 404 && name) return new AppError('NOT_FOUND', `TenantClient "${name}" does not exist.`);
      if (err.code === 422 || err.code === 400) return new AppError('BAD_REQUEST', message);
      if (err.code === 409) return new AppError('CONFLICT', message);
      if (err.code === 401 || err.code === 403)
        return new AppError('FORBIDDEN', `The Kubernetes API refused ${this.source}: ${message}`);
      return new AppError('UNAVAILABLE', `The Kubernetes API answered ${err.code}: ${message}`);
    }
    return new AppError(
      'UNAVAILABLE',
      `Cannot reach the Kubernetes API with ${this.source} (${(err as Error).message}). Is \`npm run dev\` running?`,
    );
  }
}

function apiMessage(err: ApiException<unknown>): string {
  const body = err.body;
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const message = (parsed as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : err.message;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
