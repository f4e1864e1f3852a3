/**
 * The tenant workflow `tenant:<name>` as an apply reaches it (operator-actions.ts): signalled with
 * the spec's generation, and started with it when it does not run.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import type { TenantClient } from './tenant-client.js';
import {
  applySignal,
  TENANT_LIFECYCLE_WORKFLOW,
  type ApplyRequest,
  type TenantLifecycleInput,
  type TenantLifecycleWorkflow,
} from './workflow-contract.js';

/** What the operator actions and the TenantClient controller work with. */
export interface OperationDeps {
  pool: pg.Pool;
  temporal: Client;
  config: Config;
}

export type Spec = TenantClient['spec'];
/** A TenantClient's uid and the generation of its spec. */
export type StoredGeneration = { uid: string; generation: number };

/** Signals the spec's generation to the tenant's workflow, starting it when it does not run. */
export async function signalWithStartTenant(
  deps: { temporal: Client; config: Config },
  { name, workflowId, row, spec }: { name: string; workflowId: string; row: StoredGeneration; spec: Spec },
): Promise<void> {
  const input: TenantLifecycleInput = {
    name,
    uid: row.uid,
    generation: row.generation,
    spec,
    settings: {
      readyDeadlineMs: deps.config.TENANT_READY_DEADLINE,
      soakPeriodMs: deps.config.TENANT_SOAK_PERIOD,
      probeIntervalMs: deps.config.TENANT_PROBE_INTERVAL,
      readyProbeIntervalMs: deps.config.TENANT_READY_PROBE_INTERVAL,
      reconcileBackoffMaxMs: deps.config.TENANT_RECONCILE_BACKOFF_MAX,
      historyLimit: deps.config.TENANT_HISTORY_LIMIT,
    },
  };
  await deps.temporal.workflow.signalWithStart<TenantLifecycleWorkflow, [ApplyRequest]>(TENANT_LIFECYCLE_WORKFLOW, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    signal: applySignal,
    signalArgs: [{ generation: row.generation, spec }],
    // a deprovisioned tenant's workflow is never started again; a failed or terminated one may be
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    staticSummary: `Tenant ${name}: ${spec.tier} tier, ERP ${spec.erpVersion}`,
    staticDetails: `TenantClient ${name} (uid ${row.uid})\nOwner: ${spec.ownerName} <${spec.ownerEmail}>\nProject: ${spec.projectId}`,
    typedSearchAttributes: startSearchAttributes(name, spec),
  });
}

/** The search attributes a tenant workflow starts with: who it is, its tier and version, queued. */
export function startSearchAttributes(name: string, spec: Pick<Spec, 'tier' | 'erpVersion'>) {
  return [
    { key: searchAttributes.tenant, value: name },
    { key: searchAttributes.workspace, value: name },
    { key: searchAttributes.tier, value: spec.tier },
    { key: searchAttributes.erpVersion, value: spec.erpVersion },
    { key: searchAttributes.currentStep, value: 'queued' },
  ];
}
