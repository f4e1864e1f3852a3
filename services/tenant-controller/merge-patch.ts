/**
 * The controller's writes to a TenantClient as JSON merge patches: its metadata (the finalizer),
 * held to the version read, and its status subresource.
 */
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { tenantClientGvr as gvr, type TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import type { KubeTenantStatus } from './status.js';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const fieldManager = 'tenant-controller';

/** A merge patch that holds only if the object is still the version we read (else 409, next pass). */
export async function patchMetadata(custom: CustomObjectsApi, obj: TenantClientObject, metadata: object) {
  const body = { metadata: { ...metadata, resourceVersion: obj.metadata.resourceVersion } };
  await custom.patchClusterCustomObject({ ...gvr, name: obj.metadata.name, body, fieldManager }, mergePatch);
}

export async function patchStatus(custom: CustomObjectsApi, name: string, status: KubeTenantStatus) {
  await custom.patchClusterCustomObjectStatus({ ...gvr, name, body: { status }, fieldManager }, mergePatch);
}
