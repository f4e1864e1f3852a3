/**
 * Starting the welcome e-mail of a tenant: numbers the attempt in PostgreSQL and starts
 * `sendWelcomeEmail` as `welcome:<tenant>:<n>` in the same transaction, so a failed start leaves
 * no gap and no half-written row.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { withTransaction } from './db.js';
import { AppError } from './errors.js';
import { searchAttributes, welcomeWorkflowId } from '../workflows/definitions.js';
import type { sendWelcomeEmail } from '../workflows/index.js';

export interface WelcomeStarted {
  tenant: string;
  workflowId: string;
  runId: string;
  email: string;
  workspace: string;
}

export async function startWelcomeEmail(
  deps: { pool: pg.Pool; temporal: Client; taskQueue: string },
  tenant: string,
): Promise<WelcomeStarted> {
  return withTransaction(deps.pool, async (db) => {
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
    const handle = await deps.temporal.workflow.start<typeof sendWelcomeEmail>('sendWelcomeEmail', {
      workflowId,
      taskQueue: deps.taskQueue,
      args: [{ tenant, email: row.owner_email, workspace }],
      staticSummary: `Welcome e-mail #${row.welcome_count} for tenant ${tenant}`,
      staticDetails: `Recipient: ${row.owner_email}\nWorkspace: ${workspace}`,
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: tenant },
        { key: searchAttributes.workspace, value: workspace },
        { key: searchAttributes.currentStep, value: 'queued' },
      ],
    });
    return { tenant, workflowId, runId: handle.firstExecutionRunId, email: row.owner_email, workspace };
  });
}
