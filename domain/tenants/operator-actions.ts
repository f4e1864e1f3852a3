/**
 * What reaches a tenant's workflow `tenant:<name>` from outside it: a TenantClient object's spec
 * (the controller's apply: signal-with-start), the operator actions (ops API, CLI, controller,
 * billing) as workflow updates, and the reads of its status (`get`, `list`): the workflow's live
 * answer, or what it last published to `tenant_status`.
 */
import { isGrpcDeadlineError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import { AppError } from '../../lib/errors.js';
import { temporalUiLink } from '../../lib/temporal.js';
import { readTenantStatus, type PublishedTenant } from './tenant-records.js';
import {
  cancelUpdate,
  deleteUpdate,
  reactivateUpdate,
  retryChatRoomUpdate,
  tenantClientDeletedUpdate,
  statusQuery,
  tenantWorkflowId,
  applySignal,
  TENANT_LIFECYCLE_WORKFLOW,
  type ApplyRequest,
  type TenantLifecycleInput,
  type TenantLifecycleWorkflow,
} from './workflow-contract.js';
import {
  TENANT_CLIENT_API_VERSION,
  TENANT_CLIENT_KIND,
  type Condition,
  type ErpVersion,
  type TenantClientSpec,
  type TenantPhase,
  type Tier,
  type TenantStatus,
} from './types.js';

/** What the operator actions and the TenantClient controller work with. */
export interface OperationDeps {
  pool: pg.Pool;
  temporal: Client;
  config: Config;
}

/** Signals the object's spec to the tenant's workflow, starting it when it does not run. */
export async function signalWithStartTenant(
  deps: { temporal: Client; config: Config },
  { name, workflowId, apply }: { name: string; workflowId: string; apply: ApplyRequest },
): Promise<void> {
  const { uid, spec } = apply;
  const input: TenantLifecycleInput = {
    name,
    uid,
    generation: apply.generation,
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
    signalArgs: [apply],
    // a deprovisioned tenant's workflow is never started again; a failed or terminated one may be
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    staticSummary: `Tenant ${name}: ${spec.tier} tier, ERP ${spec.erpVersion}`,
    staticDetails: `TenantClient ${name} (uid ${uid})\nOwner: ${spec.ownerName} <${spec.ownerEmail}>\nProject: ${spec.projectId}`,
    typedSearchAttributes: startSearchAttributes(name, spec),
  });
}

/** The search attributes a tenant workflow starts with: who it is, its tier and version, queued. */
export function startSearchAttributes(name: string, spec: { tier: Tier; erpVersion: ErpVersion }) {
  return [
    { key: searchAttributes.tenant, value: name },
    { key: searchAttributes.workspace, value: name },
    { key: searchAttributes.tier, value: spec.tier },
    { key: searchAttributes.erpVersion, value: spec.erpVersion },
    { key: searchAttributes.currentStep, value: 'queued' },
  ];
}

interface TenantClientRow {
  name: string;
  uid: string;
  spec: TenantClientSpec;
  generation: number;
  observed_generation: number;
  phase: TenantPhase;
  conditions: Condition[];
  status: Partial<TenantStatus>;
  created_at: Date;
  updated_at: Date;
}

/** `created`: the tenant had published no status yet (its workflow starts with this spec); `configured`: a new spec for it. */
export type ApplyResult = 'created' | 'configured';

export interface TenantClientSummary {
  name: string;
  synced: string;
  ready: string;
  phase: TenantPhase;
  generation: number;
  observedGeneration: number;
  createdAt: string;
}

export interface TenantClientResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid: string; generation: number; creationTimestamp: string };
  spec: TenantClientSpec;
  status: TenantStatus;
  /** `workflow`: the live answer of the workflow's status query; `mirror`: what it last published to PostgreSQL. */
  statusSource: 'workflow' | 'mirror';
  workflowId: string;
  temporalUiUrl: string;
}

const conditionStatus = (conditions: Condition[], type: Condition['type']) =>
  conditions.find((c) => c.type === type)?.status ?? 'Unknown';

function summary(row: TenantClientRow): TenantClientSummary {
  return {
    name: row.name,
    synced: conditionStatus(row.conditions, 'Synced'),
    ready: conditionStatus(row.conditions, 'Ready'),
    phase: row.phase,
    generation: row.generation,
    observedGeneration: row.observed_generation,
    createdAt: row.created_at.toISOString(),
  };
}

/** Phases in which a new spec is refused. */
const closedPhases: string[] = ['Cancelled', 'Deprovisioning', 'Deprovisioned'];

/**
 * A TenantClient object's spec to its tenant's workflow (the controller calls this for each new
 * generation): started with it when it does not run, signalled otherwise; the workflow ignores a
 * generation it has seen. Refused (409) for a closed tenant, or when the name's tenant belongs to
 * another object.
 */
export async function applyTenantClient(
  deps: OperationDeps,
  apply: { name: string } & ApplyRequest,
): Promise<{ result: ApplyResult; workflowId: string; temporalUiUrl: string }> {
  const { name, ...request } = apply;
  const published = await readTenantStatus(deps.pool, name);
  if (published) await checkApply(deps, name, request.uid, published);
  const workflowId = tenantWorkflowId(name);
  await signalWithStartTenant(deps, { name, workflowId, apply: request });
  return {
    result: published ? 'configured' : 'created',
    workflowId,
    temporalUiUrl: temporalUiLink(deps.config, workflowId),
  };
}

/** 409 for a closed tenant (cancelled, deprovisioned) or one that another TenantClient object made. */
async function checkApply(deps: OperationDeps, name: string, uid: string, published: PublishedTenant): Promise<void> {
  // the published status may trail an operator action the workflow has just accepted (a cancel
  // answered a moment ago): the workflow's own answer decides when it still looks active
  const phase = closedPhases.includes(published.status.phase)
    ? published.status.phase
    : ((await liveStatus(deps.temporal, name))?.phase ?? published.status.phase);
  if (closedPhases.includes(phase))
    throw new AppError(
      'CONFLICT',
      `TenantClient "${name}" is ${phase.toLowerCase()}; ${phase === 'Cancelled' && published.uid === uid ? 'reactivate it before applying a new spec' : 'a name is used once (its status and stored backups keep it): apply the tenant under a new name'}.`,
    );
  if (published.uid !== uid)
    throw new AppError(
      'CONFLICT',
      `TenantClient "${name}" names the tenant of an earlier object (uid ${published.uid}), which is ${phase.toLowerCase()}; a name is used once: apply the tenant under a new name.`,
    );
}

export async function listTenantClients(pool: pg.Pool): Promise<TenantClientSummary[]> {
  const { rows } = await pool.query<TenantClientRow>('SELECT * FROM tenant_status ORDER BY name');
  return rows.map(summary);
}

async function loadRow(pool: pg.Pool, name: string): Promise<TenantClientRow> {
  const { rows } = await pool.query<TenantClientRow>('SELECT * FROM tenant_status WHERE name = $1', [name]);
  if (!rows[0]) throw new AppError('NOT_FOUND', `TenantClient "${name}" does not exist.`);
  return rows[0];
}

export async function getTenantClientSummary(pool: pg.Pool, name: string): Promise<TenantClientSummary> {
  return summary(await loadRow(pool, name));
}

/** The live status from the workflow's query; undefined when the workflow cannot answer quickly. */
async function liveStatus(temporal: Client, name: string): Promise<TenantStatus | undefined> {
  const query = temporal.workflow.getHandle(tenantWorkflowId(name)).query(statusQuery);
  query.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 3_000)));
  try {
    return await Promise.race([query, timeout]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

export async function getTenantClient(deps: OperationDeps, name: string): Promise<TenantClientResource> {
  const row = await loadRow(deps.pool, name);
  const live = await liveStatus(deps.temporal, name);
  const mirrored = {
    resources: {},
    steps: [],
    currentStep: 'queued',
    ...row.status,
    name,
    generation: row.generation,
    observedGeneration: row.observed_generation,
    phase: row.phase,
    conditions: row.conditions,
  } as TenantStatus;
  const workflowId = tenantWorkflowId(name);
  return {
    apiVersion: TENANT_CLIENT_API_VERSION,
    kind: TENANT_CLIENT_KIND,
    metadata: { name, uid: row.uid, generation: row.generation, creationTimestamp: row.created_at.toISOString() },
    spec: row.spec,
    status: live ?? mirrored,
    statusSource: live ? 'workflow' : 'mirror',
    workflowId,
    temporalUiUrl: temporalUiLink(deps.config, workflowId),
  };
}

const actions = {
  cancel: cancelUpdate,
  reactivate: reactivateUpdate,
  delete: deleteUpdate,
  'retry-chat-room': retryChatRoomUpdate,
  'tenantclient-deleted': tenantClientDeletedUpdate,
} as const;
export type TenantAction = keyof typeof actions;

/** How long an operator action waits for the tenant's workflow to accept or refuse it. */
const ACTION_DEADLINE_MS = 10_000;

/** Runs an operator action as a workflow update: refused (409) with the workflow's reason, else the new status. */
export async function runTenantAction(deps: OperationDeps, name: string, action: TenantAction): Promise<TenantStatus> {
  const row = await loadRow(deps.pool, name);
  if (row.phase === 'Deprovisioned') {
    throw new AppError(
      'CONFLICT',
      `TenantClient "${name}" is deprovisioned; there is nothing to ${action.replace(/-/g, ' ')}.`,
    );
  }
  return executeTenantUpdate(deps.temporal, name, action.replace(/-/g, ' '), (handle) =>
    handle.executeUpdate(actions[action]),
  );
}

/**
 * Sends an update to the tenant's workflow and waits for its answer: refused (409) with the
 * workflow's reason, 503 when no worker answers in time, 409 when the workflow does not run.
 */
export async function executeTenantUpdate<Ret>(
  temporal: Client,
  name: string,
  what: string,
  send: (handle: WorkflowHandle) => Promise<Ret>,
): Promise<Ret> {
  const handle = temporal.workflow.getHandle(tenantWorkflowId(name));
  try {
    // the workflow answers within a workflow task; without a worker it never would, so do not wait forever
    return await temporal.connection.withDeadline(Date.now() + ACTION_DEADLINE_MS, () => send(handle));
  } catch (err) {
    if (isGrpcDeadlineError(err) || isGrpcDeadlineError((err as { cause?: unknown }).cause)) {
      throw new AppError(
        'UNAVAILABLE',
        `The workflow of TenantClient "${name}" did not answer within ${ACTION_DEADLINE_MS / 1000} s (is a worker running?); the ${what} may still take effect once it does.`,
      );
    }
    if (err instanceof WorkflowUpdateFailedError) {
      throw new AppError('CONFLICT', `Cannot ${what} TenantClient "${name}": ${err.cause?.message ?? err.message}.`);
    }
    if (err instanceof WorkflowNotFoundError) {
      throw new AppError(
        'CONFLICT',
        `TenantClient "${name}" has no running workflow; apply it again to resume reconciling.`,
      );
    }
    throw err;
  }
}
