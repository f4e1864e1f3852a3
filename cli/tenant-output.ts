/** How the CLI shows TenantClients: kubectl-like tables and a `describe` page. */
import { InvalidArgumentError } from 'commander';
import type { TenantClientResource, TenantClientSummary } from '../domain/tenants/operator-actions.js';
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

export function tenantTable(items: TenantClientSummary[]): string {
  const table = plainTable(['NAME', 'SYNCED', 'READY', 'PHASE', 'AGE']);
  for (const t of items) table.push([t.name, t.synced, t.ready, t.phase, age(t.createdAt)]);
  return table.toString();
}

export function describeTenant(t: TenantClientResource): string {
  const lines: string[] = [];
  const kv = (k: string, v: unknown) => lines.push(`${`${k}:`.padEnd(22)}${v ?? ''}`);
  kv('Name', t.metadata.name);
  kv('API Version', t.apiVersion);
  kv('Kind', t.kind);
  kv('UID', t.metadata.uid);
  kv('Created', `${t.metadata.creationTimestamp} (${age(t.metadata.creationTimestamp)} ago)`);
  kv('Generation', `${t.metadata.generation} (observed ${t.status.observedGeneration})`);
  kv('Phase', t.status.phase);
  kv('Current step', t.status.currentStep);
  if (t.status.cancelledAt) kv('Cancelled', t.status.cancelledAt);
  if (t.status.deprovisionAt) kv('Deprovision at', t.status.deprovisionAt);
  if (t.status.deprovisionedAt) kv('Deprovisioned', t.status.deprovisionedAt);
  if (t.status.provisionedEventId) kv('Provisioned event', t.status.provisionedEventId);
  kv('Workflow', `${t.workflowId} (status from the ${t.statusSource})`);
  kv('Temporal UI', t.temporalUiUrl);
  lines.push('Spec:');
  for (const [k, v] of Object.entries(t.spec)) lines.push(`  ${k.padEnd(20)}${v}`);

  lines.push('Conditions:');
  const conditions = plainTable(['TYPE', 'STATUS', 'REASON', 'GEN', 'LAST TRANSITION', 'MESSAGE'], { indent: 2 });
  for (const c of t.status.conditions)
    conditions.push([c.type, c.status, c.reason, c.observedGeneration, c.lastTransitionTime, c.message]);
  lines.push(conditions.toString());

  lines.push('Resources:');
  const resources = plainTable(['RESOURCE', 'SYNCED', 'STATE', 'NAME', 'MESSAGE'], { indent: 2 });
  for (const kind of resourceKinds) {
    const r = t.status.resources?.[kind];
    if (r) resources.push([kind, r.synced, r.state, r.externalName, r.message]);
  }
  lines.push(resources.toString());

  lines.push('Recent steps:');
  const steps = plainTable(['AT', 'STEP', 'OUTCOME', 'MESSAGE'], { indent: 2 });
  for (const s of t.status.steps.slice(-15)) steps.push([s.at, s.step, s.outcome, s.message]);
  lines.push(steps.toString());
  return lines.join('\n');
}
