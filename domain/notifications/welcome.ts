/**
 * Starting the welcome e-mail of a tenant: numbers the attempt in PostgreSQL and starts
 * `sendWelcomeEmail` as `welcome:<tenant>:<n>` in the same transaction, so a failed start leaves
 * no gap and no half-written row.
 */
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowStartOptions } from '@temporalio/client';
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import { WELCOME_EMAIL_WORKFLOW, welcomeWorkflowId, type SendWelcomeEmailWorkflow } from './workflow-contract.js';

export interface WelcomeStarted {
  tenant: string;
  workflowId: string;
  runId: string;
  email: string;
  workspace: string;
}

/** Starts `welcome:<tenant>:<n>` with the summary, details and search attributes operators filter on. */
function startWelcomeWorkflow(
  deps: { temporal: Client; taskQueue: string },
  w: { tenant: string; n: number; email: string; workspace: string; reason?: string },
  policies: Pick<WorkflowStartOptions, 'workflowIdReusePolicy' | 'workflowIdConflictPolicy'> = {},
) {
  return deps.temporal.workflow.start<SendWelcomeEmailWorkflow>(WELCOME_EMAIL_WORKFLOW, {
    workflowId: welcomeWorkflowId(w.tenant, w.n),
    taskQueue: deps.taskQueue,
    args: [{ tenant: w.tenant, email: w.email, workspace: w.workspace }],
    staticSummary: `Welcome e-mail #${w.n} for tenant ${w.tenant}${w.reason ? ` (${w.reason})` : ''}`,
    staticDetails: `Recipient: ${w.email}\nWorkspace: ${w.workspace}`,
    typedSearchAttributes: [
      { key: searchAttributes.tenant, value: w.tenant },
      { key: searchAttributes.workspace, value: w.workspace },
      { key: searchAttributes.currentStep, value: 'queued' },
    ],
    ...policies,
  });
}

/**
 * The welcome e-mail says "your workspace is ready": 409 naming the phase for a tenant whose
 * TenantClient is not Ready (deleted, cancelled, still provisioning, unavailable). The row is
 * locked (shared) until the start commits, so the phase cannot move meanwhile. A tenant without a
 * TenantClient (seeded, outside the lifecycle: the demo) is not refused.
 */
async function refuseUnlessReady(db: Queryable, tenant: string): Promise<void> {
  const { rows } = await db.query<{ phase: string }>('SELECT phase FROM tenant_status WHERE name = $1 FOR SHARE', [
    tenant,
  ]);
  const phase = rows[0]?.phase;
  if (phase === undefined || phase === 'Ready') return;
  throw new AppError(
    'CONFLICT',
    `Tenant "${tenant}" is ${phase}, not Ready: its welcome e-mail ("your workspace is ready") is sent only for a Ready tenant.`,
    {
      tenant,
      phase,
    },
  );
}

export async function startWelcomeEmail(
  deps: { pool: pg.Pool; temporal: Client; taskQueue: string },
  tenant: string,
): Promise<WelcomeStarted> {
  return withTransaction(deps.pool, async (db) => {
    await refuseUnlessReady(db, tenant);
    const { rows } = await db.query<{ owner_email: string; workspace: string | null; welcome_count: number }>(
      `UPDATE tenants SET welcome_count = welcome_count + 1
        WHERE name = $1
        RETURNING owner_email, welcome_count,
                  (SELECT slug FROM workspaces w WHERE w.id = tenants.workspace_id) AS workspace`,
      [tenant],
    );
    const row = rows[0];
    if (!row) throw new AppError('NOT_FOUND', `Tenant "${tenant}" is not known to the platform.`);
    const workspace = row.workspace ?? tenant;
    const workflowId = welcomeWorkflowId(tenant, row.welcome_count);
    const handle = await startWelcomeWorkflow(deps, {
      tenant,
      n: row.welcome_count,
      email: row.owner_email,
      workspace,
    });
    return { tenant, workflowId, runId: handle.firstExecutionRunId, email: row.owner_email, workspace };
  });
}

/**
 * The first welcome e-mail of a tenant, `welcome:<tenant>:1`, started at most once however often
 * `client.provisioned` is delivered: the tenant's count moves from 0 to 1 only once (the row lock
 * serialises concurrent deliveries), and Temporal refuses a second run with the same id
 * (REJECT_DUPLICATE, FAIL on conflict), which also covers a crash between the start and the commit.
 * `started` is false when it had been started before. Unknown tenant: 404.
 */
export async function startFirstWelcomeEmail(
  deps: { pool: pg.Pool; temporal: Client; taskQueue: string },
  tenant: string,
): Promise<WelcomeStarted & { started: boolean }> {
  return withTransaction(deps.pool, async (db) => {
    const { rows } = await db.query<{ owner_email: string; workspace: string | null; claimed: boolean }>(
      `WITH claimed AS (
         UPDATE tenants SET welcome_count = 1 WHERE name = $1 AND welcome_count = 0 RETURNING name
       )
       SELECT t.owner_email, w.slug AS workspace, EXISTS (SELECT 1 FROM claimed) AS claimed
         FROM tenants t LEFT JOIN workspaces w ON w.id = t.workspace_id
        WHERE t.name = $1`,
      [tenant],
    );
    const row = rows[0];
    if (!row) throw new AppError('NOT_FOUND', `Tenant "${tenant}" is not known to the platform.`);
    const workspace = row.workspace ?? tenant;
    const workflowId = welcomeWorkflowId(tenant, 1);
    const done = { tenant, workflowId, email: row.owner_email, workspace };
    if (!row.claimed) return { ...done, runId: '', started: false };
    try {
      const handle = await startWelcomeWorkflow(
        deps,
        { tenant, n: 1, email: row.owner_email, workspace, reason: 'client.provisioned' },
        { workflowIdReusePolicy: 'REJECT_DUPLICATE', workflowIdConflictPolicy: 'FAIL' },
      );
      return { ...done, runId: handle.firstExecutionRunId, started: true };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return { ...done, runId: '', started: false };
      throw err;
    }
  });
}
