/**
 * All activities, built from explicit dependencies. The worker builds the dependencies once and
 * registers `createActivities(deps)`; workflows import only the type.
 */
import { createNotificationsActivities, type NotificationsDeps } from './notifications.js';
import { createTenantLifecycleActivities, type PlatformDeps } from './tenant-lifecycle.js';
import { createTenantRestoreActivities } from './tenant-restores.js';
import { createBackupDrillActivities } from './backup-drills.js';
import { createExecutionLogActivities } from './execution-log.js';
import { createRotationActivities } from './service-key-rotation.js';
import { createSecretStoreWriter } from '../domain/service-keys/secret-store-factory.js';
import { rotationSettings } from '../domain/service-keys/rotation.js';
import { createBillingActivities } from './billing.js';
import { createWebhookActivities } from './webhooks.js';
import { webhookSender } from '../domain/webhooks/delivery-retries.js';
import { WORKER_CALLER } from './deps.js';
import { erpApiUserDeps } from '../domain/erp/api-user.js';

export type ActivityDeps = NotificationsDeps & { tenant: PlatformDeps };

export const createActivities = (deps: ActivityDeps) => ({
  ...createNotificationsActivities(deps),
  ...createTenantLifecycleActivities(deps.tenant),
  ...createTenantRestoreActivities(deps.tenant),
  ...createBackupDrillActivities(deps),
  ...createExecutionLogActivities({ pool: deps.tenant.platformPool, config: deps.tenant.config }),
  ...createRotationActivities({
    pool: deps.tenant.platformPool,
    // the rotation writes the store (PostgreSQL, or PostgreSQL + the Kubernetes Secret: secret-store-factory.ts)
    store: createSecretStoreWriter(deps.tenant.config, deps.tenant.platformPool),
    secrets: deps.tenant.secrets,
    eventsUrl: deps.tenant.config.EVENTS_URL,
    starter: {
      temporal: deps.tenant.temporal,
      taskQueue: deps.tenant.config.TEMPORAL_TASK_QUEUE,
      settings: rotationSettings(deps.tenant.config),
    },
    // erp → event-ingestion (proof `rules`): the tenants' rules, reached as ensure-tier-modules reaches them
    eventRules: {
      pool: deps.tenant.platformPool,
      erp: erpApiUserDeps(deps.tenant.config, deps.tenant.platformPool),
      eventsUrl: deps.tenant.config.EVENTS_URL,
    },
  }),
  ...createBillingActivities({
    pool: deps.tenant.platformPool,
    notificationsUrl: deps.notificationsUrl,
    notificationsKey: deps.notificationsKey,
    apiPublicUrl: deps.tenant.config.API_PUBLIC_URL,
  }),
  ...createWebhookActivities({
    pool: deps.tenant.platformPool,
    config: deps.tenant.config,
    sender: webhookSender(deps.tenant.config),
    notificationsUrl: deps.notificationsUrl,
    notificationsKey: deps.notificationsKey,
    eventsKey: async () => (await deps.tenant.secrets.current(WORKER_CALLER, 'events')).key,
  }),
});

export type Activities = ReturnType<typeof createActivities>;
