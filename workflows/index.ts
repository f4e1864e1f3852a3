/** Every workflow the worker registers (its single `workflowsPath`). */
export { sendWelcomeEmail } from './send-welcome-email.js';
export { tenantLifecycle } from './tenant-lifecycle/index.js';
export { backupTenant } from './backup-tenant.js';
export { pruneExpiredBackups } from './prune-expired-backups.js';
export { pruneExecutionLog } from './prune-execution-log.js';
export { rotateServiceKey } from './rotate-service-key.js';
export { annualServiceKeyRotation } from './annual-service-key-rotation.js';
export { dunWorkspace } from './dun-workspace.js';
export { webhookDelivery } from './webhook-delivery.js';
export { pruneWebhookHistory } from './prune-webhook-history.js';
export { sweepErpEvents } from './sweep-erp-events.js';
