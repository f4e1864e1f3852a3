/** Every workflow the worker registers (its single `workflowsPath`). */
import type { DunWorkspaceWorkflow } from '../domain/billing/workflow-contract.js';
import type { ApplyRetentionWorkflow } from '../domain/retention-workflow-contract.js';
import type { SendWelcomeEmailWorkflow } from '../domain/notifications/workflow-contract.js';
import type { RotateServiceKeyWorkflow } from '../domain/service-keys/workflow-contract.js';
import type { BackupTenantWorkflow, TenantLifecycleWorkflow } from '../domain/tenants/workflow-contract.js';
import type { WebhookEndpointRetriesWorkflow } from '../domain/webhooks/workflow-contract.js';
import type {
  RestoreTenantBackupWorkflow,
  RestoreTenantInPlaceWorkflow,
} from '../domain/tenants/restore-workflow-contract.js';
import { restoreTenantBackup } from './restore-tenant-backup.js';
import { restoreTenantInPlace } from './restore-tenant-in-place.js';
import { sendWelcomeEmail } from './send-welcome-email.js';
import { tenantLifecycle } from './tenant-lifecycle/index.js';
import { backupTenant } from './backup-tenant.js';
import { rotateServiceKey } from './rotate-service-key.js';
import { dunWorkspace } from './dun-workspace.js';
import { webhookEndpointRetries } from './webhook-endpoint-retries.js';
import { applyRetention } from './apply-retention.js';

export {
  sendWelcomeEmail,
  tenantLifecycle,
  backupTenant,
  rotateServiceKey,
  dunWorkspace,
  webhookEndpointRetries,
  restoreTenantBackup,
  restoreTenantInPlace,
  applyRetention,
};
export { drillBackups, drillTenantBackup } from './drill-backups.js';
export { annualServiceKeyRotation } from './annual-service-key-rotation.js';
export { sweepErpEvents } from './sweep-erp-events.js';

/** Compiles only when `Implementation` can be called as its `Contract` says. */
type Meets<Contract, Implementation extends Contract> = Implementation;

/**
 * domain/ starts these workflows by type name with the signatures of their contracts
 * (domain/<area>/workflow-contract.ts); this keeps each implementation true to its contract at
 * compile time (a changed input or result fails the typecheck here). Types only: nothing at run time.
 */
export type WorkflowsMeetTheirContracts = [
  Meets<SendWelcomeEmailWorkflow, typeof sendWelcomeEmail>,
  Meets<TenantLifecycleWorkflow, typeof tenantLifecycle>,
  Meets<BackupTenantWorkflow, typeof backupTenant>,
  Meets<RotateServiceKeyWorkflow, typeof rotateServiceKey>,
  Meets<DunWorkspaceWorkflow, typeof dunWorkspace>,
  Meets<WebhookEndpointRetriesWorkflow, typeof webhookEndpointRetries>,
  Meets<RestoreTenantBackupWorkflow, typeof restoreTenantBackup>,
  Meets<RestoreTenantInPlaceWorkflow, typeof restoreTenantInPlace>,
  Meets<ApplyRetentionWorkflow, typeof applyRetention>,
];
