/** How the CLI shows TenantClients: kubectl-like tables and a `describe` page. */
import { InvalidArgumentError } from 'commander';
import type { TenantClientEvent, TenantClientObject, TenantClientRow } from '../domain/tenants/tenant-client-api.js';
import { resourceKinds } from '../domain/tenants/types.js';
import { age, plainTable } from './table.js';

/** The resource names `get`, `describe` and the actions accept for TenantClients. */
export const TENANT_RESOURCE_NAMES = ['tenant', 'tenants', 'tenantclient', 'tenantclients', 'tc'];

/** The `<resource>` argument's parser: a TenantClient resource name, or the names it may be. */
export function tenantResource(resource: string): string {
  if (!TENANT_RESOURCE_NAMES.includes(resource.toLowerCase())) {
    throw new InvalidArgumentError(`Unknown resource type (known: ${TENANT_RESOURCE_NAMES.join(', ')}).`);
  }
  return resource;
}

export function tenantTable(items: TenantClientRow[]): string {
  const table = plainTable(['NAME', 'SYNCED', 'READY', 'PHASE', 'AGE']);
  for (const t of items) table.push([t.name, t.synced, t.ready, t.phase, age(t.createdAt)]);
  return table.toString();
}

/** `describe tenant`: the object, its status as the controller wrote it, and its Events (the workflow's steps). */
export function describeTenant(t: TenantClientObject, events: TenantClientEvent[]): string {
  const lines: string[] = [];
  const kv = (k: string, v: unknown) => lines.push(`${`${k}:`.padEnd(22)}${v ?? ''}`);
  const status = t.status ?? {};
  const created = String(t.metadata.creationTimestamp ?? '');
  kv('Name', t.metadata.name);
  kv('API Version', t.apiVersion);
  kv('Kind', t.kind);
  kv('UID', t.metadata.uid);
  kv('Created', `${created} (${age(created)} ago)`);
  kv('Generation', `${t.metadata.generation} (observed ${status.observedGeneration ?? 0})`);
  if (t.metadata.deletionTimestamp) kv('Deleting since', t.metadata.deletionTimestamp);
  kv('Phase', status.phase);
  kv('Current step', status.currentStep);
  if (status.cancelledAt) kv('Cancelled', status.cancelledAt);
  if (status.deprovisionAt) kv('Deprovision at', status.deprovisionAt);
  if (status.deprovisionedAt) kv('Deprovisioned', status.deprovisionedAt);
  kv('Workflow', status.workflowId);
  kv('Temporal UI', status.temporalUiUrl);
  if (status.traceUrl) kv('Trace', status.traceUrl);
  lines.push('Spec:');
  for (const [k, v] of Object.entries(t.spec)) lines.push(`  ${k.padEnd(20)}${String(v)}`);

  lines.push('Conditions:');
  const conditions = plainTable(['TYPE', 'STATUS', 'REASON', 'GEN', 'LAST TRANSITION', 'MESSAGE'], { indent: 2 });
  for (const c of status.conditions ?? [])
    conditions.push([c.type, c.status, c.reason, c.observedGeneration, c.lastTransitionTime, c.message]);
  lines.push(conditions.toString());

  lines.push('Resources:');
  const resources = plainTable(['RESOURCE', 'SYNCED', 'STATE', 'NAME', 'MESSAGE'], { indent: 2 });
  for (const kind of resourceKinds) {
    const r = status.resources?.[kind];
    if (r) resources.push([kind, r.synced, r.state, r.externalName, r.message]);
  }
  lines.push(resources.toString());

  lines.push('Events:');
  const table = plainTable(['AT', 'TYPE', 'REASON', 'MESSAGE'], { indent: 2 });
  for (const e of events) table.push([e.at, e.type, e.reason, e.message]);
  lines.push(table.toString());
  return lines.join('\n');
}
