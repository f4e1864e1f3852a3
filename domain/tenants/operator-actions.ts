/**
 * What an operator does with TenantClients (the ops API and, through it, the CLI): apply, list,
 * get, and the lifecycle actions. The desired spec and its generation live in `tenant_clients`;
 * the tenant's workflow `tenant:<name>` reconciles it and mirrors its status back.
 */
import { isGrpcDeadlineError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { temporalUiLink } from '../../lib/temporal.js';
import { immutableChanges, problemsDetail, sameSpec, type TenantClient } from './tenant-client.js';
import {
  signalWithStartTenant,
  type OperationDeps,
  type Spec,
  type StoredGeneration,
} from './tenant-workflow-start.js';
import {
  cancelUpdate,
  deleteUpdate,
  reactivateUpdate,
  retryChatRoomUpdate,
  tenantClientDeletedUpdate,
  statusQuery,
  tenantWorkflowId,
} from './workflow-contract.js';
import {
  TENANT_CLIENT_API_VERSION,
  TENANT_CLIENT_KIND,
  type Condition,
  type TenantClientSpec,
  type TenantPhase,
  type TenantStatus,
} from './types.js';

export type { OperationDeps } from './tenant-workflow-start.js';

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
  /** `workflow`: the live answer of the workflow's status query; `mirror`: the copy in PostgreSQL. */
  statusSource: 'workflow' | 'mirror';
  workflowId: string;
  temporalUiUrl: string;
}

export type ApplyResult = 'created' | 'configured' | 'unchanged';

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
 * kubectl-apply semantics: a new name creates the TenantClient and starts its workflow; a changed
 * spec raises the generation and is signalled to the workflow; the same spec again changes
 * nothing. The workflow is signalled-with-start inside the transaction, so a failure leaves
 * neither a row without a workflow nor a generation the workflow never saw.
 */
export async function applyTenantClient(
  deps: OperationDeps,
  resource: TenantClient,
): Promise<{ result: ApplyResult; name: string; generation: number; workflowId: string; temporalUiUrl: string }> {
  const { name } = resource.metadata;
  const { spec } = resource;
  const workflowId = tenantWorkflowId(name);
  return withTransaction(deps.pool, async (db) => {
    const { result, row } = await storeSpec(deps, db, name, spec);
    await signalWithStartTenant(deps, { name, workflowId, row, spec });
    return {
      result,
      name,
      generation: row.generation,
      workflowId,
      temporalUiUrl: temporalUiLink(deps.config, workflowId),
    };
  });
}

/** The spec into `tenant_clients`: a new row, a new generation, or nothing when it is the same spec. */
async function storeSpec(
  deps: OperationDeps,
  db: pg.PoolClient,
  name: string,
  spec: Spec,
): Promise<{ result: ApplyResult; row: StoredGeneration }> {
  const inserted = await db.query<StoredGeneration>(
    `INSERT INTO tenant_clients (name, spec) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING uid, generation`,
    [name, JSON.stringify(spec)],
  );
  if (inserted.rows[0]) return { result: 'created', row: inserted.rows[0] };
  // someone else's apply of the same name waits here until ours commits (and vice versa)
  const current = (await db.query<TenantClientRow>('SELECT * FROM tenant_clients WHERE name = $1 FOR UPDATE', [name]))
    .rows[0]!;
  await checkSpecChange(deps, current, spec);
  if (sameSpec(current.spec, spec))
    return { result: 'unchanged', row: { uid: current.uid, generation: current.generation } };
  const updated = await db.query<StoredGeneration>(
    `UPDATE tenant_clients SET spec = $2, generation = generation + 1, updated_at = now() WHERE name = $1 RETURNING uid, generation`,
    [name, JSON.stringify(spec)],
  );
  return { result: 'configured', row: updated.rows[0]! };
}

/** 409 for a closed tenant (cancelled, deprovisioned) or a change of an immutable field. */
async function checkSpecChange(deps: OperationDeps, current: TenantClientRow, spec: Spec): Promise<void> {
  const { name } = current;
  // the mirror in PostgreSQL may trail an operator action the workflow has just accepted (a
  // cancel answered a moment ago): the workflow's own answer decides when the row still looks active
  const phase = closedPhases.includes(current.phase)
    ? current.phase
    : ((await liveStatus(deps.temporal, name))?.phase ?? current.phase);
  if (closedPhases.includes(phase)) {
    throw new AppError(
      'CONFLICT',
      `TenantClient "${name}" is ${phase.toLowerCase()}; ${phase === 'Cancelled' ? 'reactivate it before applying a new spec' : 'a name is used once (its status and stored backups keep it): apply the tenant under a new name'}.`,
    );
  }
  const immutable = immutableChanges(current.spec, spec);
  if (immutable.length) throw new AppError('CONFLICT', problemsDetail(immutable), { errors: immutable });
}

export async function listTenantClients(pool: pg.Pool): Promise<TenantClientSummary[]> {
  const { rows } = await pool.query<TenantClientRow>('SELECT * FROM tenant_clients ORDER BY name');
  return rows.map(summary);
}

async function loadRow(pool: pg.Pool, name: string): Promise<TenantClientRow> {
  const { rows } = await pool.query<TenantClientRow>('SELECT * FROM tenant_clients WHERE name = $1', [name]);
  if (!rows[0]) throw new AppError('NOT_FOUND', `TenantClient "${name}" does not exist.`);
  return rows[0];
}

export async function getTenantClientSummary(pool: pg.Pool, name: string): Promise<TenantClientSummary> {
  return summary(await loadRow(pool, name));
}

/** The live status from the workflow's query; the PostgreSQL mirror when the workflow cannot answer quickly. */
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
  // before the workflow's first mirror the row holds only the columns' defaults
  const mirrored = {
    resources: {},
    steps: [],
    currentStep: 'queued',
    ...row.status,
    name,
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
    status: { ...(live ?? mirrored), generation: row.generation },
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
  const handle = deps.temporal.workflow.getHandle(tenantWorkflowId(name));
  try {
    // the workflow answers within a workflow task; without a worker it never would, so do not wait forever
    return await deps.temporal.connection.withDeadline(Date.now() + ACTION_DEADLINE_MS, () =>
      handle.executeUpdate(actions[action]),
    );
  } catch (err) {
    if (isGrpcDeadlineError(err) || isGrpcDeadlineError((err as { cause?: unknown }).cause)) {
      throw new AppError(
        'UNAVAILABLE',
        `The workflow of TenantClient "${name}" did not answer within ${ACTION_DEADLINE_MS / 1000} s (is a worker running?); the ${action.replace(/-/g, ' ')} may still take effect once it does.`,
      );
    }
    if (err instanceof WorkflowUpdateFailedError) {
      throw new AppError(
        'CONFLICT',
        `Cannot ${action.replace(/-/g, ' ')} TenantClient "${name}": ${err.cause?.message ?? err.message}.`,
      );
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
