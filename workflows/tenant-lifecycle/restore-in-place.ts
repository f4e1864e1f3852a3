/**
 * Restore in place as the tenant lifecycle's child: the update starts `restore:<name>`
 * (workflows/restore-tenant-in-place.ts) and answers its id; while it runs the lifecycle takes no
 * other step on the tenant (index.ts waits on `restoringInPlace`); when it ends, its outcome is a
 * step of the tenant and the restored tenant is reconciled.
 */
import { ChildWorkflowFailure, ParentClosePolicy, setHandler, startChild } from '@temporalio/workflow';
import {
  RESTORE_TENANT_IN_PLACE_WORKFLOW,
  restoreWorkflowId,
  type RestoreTenantInPlaceWorkflow,
} from '../../domain/tenants/restore-workflow-contract.js';
import { restoreInPlaceUpdate } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import type { TenantPhase } from '../../domain/tenants/types.js';
import type { TenantState } from './state.js';

const PHASES_IN_PLACE: TenantPhase[] = ['Ready', 'Unavailable', 'Cancelled'];

export function setRestoreInPlaceHandler(tenant: TenantState): void {
  const state = tenant.state;
  setHandler(
    restoreInPlaceUpdate,
    async (request) => {
      state.restoringInPlace = request.name;
      tenant.recordStep('restore-in-place', 'ok', `restoring backup ${request.backup.backupId} into the tenant`);
      tenant.touch();
      const child = await startChild<RestoreTenantInPlaceWorkflow>(RESTORE_TENANT_IN_PLACE_WORKFLOW, {
        workflowId: restoreWorkflowId(request.name),
        args: [request],
        // a restore half done cleans up after itself, whatever happens to this run
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: `Restore backup ${request.backup.backupId} of ${request.tenant} in place (safety backup first)`,
        typedSearchAttributes: [
          { key: searchAttributes.tenant, value: request.tenant },
          { key: searchAttributes.tier, value: request.tier },
        ],
      });
      void child.result().then(
        (result) =>
          restored(tenant, `backup ${result.backupId} restored; what it replaced: backup ${result.safetyBackupId}`),
        (err: unknown) => restored(tenant, childFailure(err), 'failed'),
      );
      return child.workflowId;
    },
    {
      validator: (request) => {
        if (request.tenant !== state.name) throw new Error(`restore ${request.name} is not tenant ${state.name}'s`);
        if (state.restoringInPlace)
          throw new Error(
            `tenant ${state.name} is being restored in place already (restore ${state.restoringInPlace})`,
          );
        if (!PHASES_IN_PLACE.includes(state.phase))
          throw new Error(
            `tenant ${state.name} is ${state.phase}: only a Ready, Unavailable or Cancelled tenant can be restored in place`,
          );
      },
    },
  );
}

/** The in-place restore ended: its outcome recorded, the tenant reconciled again. */
function restored(tenant: TenantState, message: string, outcome: 'ok' | 'failed' = 'ok'): void {
  tenant.state.restoringInPlace = undefined;
  tenant.recordStep('restore-in-place', outcome, message);
  tenant.needsReconcile = true;
  tenant.touch();
}

/** What failed the child: its own failure's message (the child wraps it). */
function childFailure(err: unknown): string {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}
