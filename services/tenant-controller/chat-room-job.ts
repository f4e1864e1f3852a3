/**
 * The support chat room as a composed object: a batch/v1 Job `chat-room-<tenant>` in the namespace
 * of the tenant's ERP version (plana-odoo-<erpVersion>), owned by its TenantClient. §3.2's retry
 * of the chat room is "delete its job": a pass that finds the Job gone after it had made it asks
 * the workflow to create the room again (retry-chat-room) and makes the Job again.
 *
 * Why a Job, and why suspended: the room is made by the platform's workflow, not by a pod, so the
 * Job is created with `spec.suspend: true`; no Job controller ever starts a pod for it (nor does one
 * run locally: there is no kubelet). It is the object an operator sees, deletes and RBAC governs.
 */
import { ApiException, type BatchV1Api, type V1Job } from '@kubernetes/client-node';
import type { ComposedObjectState, TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, type ResourceState } from '../../domain/tenants/types.js';
import type { ComposedObjectCache } from './object-cache.js';

export const chatRoomJobName = (tenant: string) => `chat-room-${tenant}`;
export const tenantNamespace = (erpVersion: unknown) => `plana-odoo-${String(erpVersion ?? '18')}`;

/** What the pass does with the chat-room Job of one TenantClient. */
export interface ChatRoomJobOutcome {
  state: ComposedObjectState;
  /** The Job had been made and is gone now: the room is to be created again. */
  deleted: boolean;
}

/** Reads the Job (from the informers' cache, object-cache.ts); makes it when missing. */
export async function ensureChatRoomJob(
  cache: ComposedObjectCache,
  obj: TenantClientObject,
  room: ResourceState,
): Promise<ChatRoomJobOutcome> {
  const name = chatRoomJobName(obj.metadata.name);
  const namespace = tenantNamespace(obj.spec.erpVersion);
  const base = { apiVersion: 'batch/v1', kind: 'Job', namespace, name };
  const recorded = obj.status?.objects?.chatRoom;
  try {
    const found = await cache.read(base);
    if (found) return { state: { ...base, uid: found.metadata?.uid, ...inPlace(room) }, deleted: false };
    const created = await cache.create(base, chatRoomJob(obj, room, namespace, name));
    return {
      state: { ...base, uid: created.metadata?.uid, ...inPlace(room) },
      deleted: recorded?.uid !== undefined && recorded.uid !== created.metadata?.uid,
    };
  } catch (err) {
    const message = err instanceof ApiException ? `${err.code}: ${apiMessage(err)}` : (err as Error).message;
    return { state: { ...base, synced: 'False', message: `cannot keep the Job: ${message}` }, deleted: false };
  }
}

/** Deletes the Job (a cluster's garbage collector would, through the owner reference; there may be none). */
export async function deleteChatRoomJob(batch: BatchV1Api, obj: TenantClientObject): Promise<void> {
  try {
    await batch.deleteNamespacedJob({
      name: chatRoomJobName(obj.metadata.name),
      namespace: tenantNamespace(obj.spec.erpVersion),
      propagationPolicy: 'Background',
    });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  }
}

const inPlace = (room: ResourceState) => ({
  synced: 'True' as const,
  message: `the chat room ${room.externalName}: ${room.state}`,
});

function chatRoomJob(obj: TenantClientObject, room: ResourceState, namespace: string, name: string): V1Job {
  const labels = {
    'app.kubernetes.io/part-of': 'plana',
    'plana.dev/tenant': obj.metadata.name,
    'plana.dev/resource': 'chatRoom',
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace,
      labels,
      annotations: { 'plana.dev/chat-room': room.externalName },
      ownerReferences: [
        {
          apiVersion: TENANT_CLIENT_API_VERSION,
          kind: TENANT_CLIENT_KIND,
          name: obj.metadata.name,
          uid: obj.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      // the platform's workflow makes the room: no pod ever runs for this Job
      suspend: true,
      backoffLimit: 0,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'chat-room', image: 'plana/platform:latest', command: ['true'] }],
        },
      },
    },
  };
}

function apiMessage(err: ApiException<unknown>): string {
  try {
    const body = typeof err.body === 'string' ? (JSON.parse(err.body) as { message?: string }) : undefined;
    return body?.message ?? err.message;
  } catch {
    return err.message;
  }
}
