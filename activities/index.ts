/**
 * All activities, built from explicit dependencies. The worker builds the dependencies once and
 * registers `createActivities(deps)`; workflows import only the type.
 */
import { createNotificationsActivities, type NotificationsDeps } from './notifications.js';
import { createTenantLifecycleActivities, type TenantActivityDeps } from './tenant-lifecycle.js';
import { createExecutionLogActivities } from './execution-log.js';

export type ActivityDeps = NotificationsDeps & { tenant: TenantActivityDeps };

export const createActivities = (deps: ActivityDeps) => ({
  ...createNotificationsActivities(deps),
  ...createTenantLifecycleActivities(deps.tenant),
  ...createExecutionLogActivities({ pool: deps.tenant.platformPool, config: deps.tenant.config }),
});

export type Activities = ReturnType<typeof createActivities>;
