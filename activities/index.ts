/**
 * All activities, built from explicit dependencies. The worker builds the dependencies once and
 * registers `createActivities(deps)`; workflows import only the type.
 */
import { createNotificationsActivities, type NotificationsDeps } from './notifications.js';
import { createTenantLifecycleActivities, type TenantActivityDeps } from './tenant-lifecycle.js';
import { createExecutionLogActivities } from './execution-log.js';
import { createRotationActivities } from './service-key-rotation.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';

export type ActivityDeps = NotificationsDeps & { tenant: TenantActivityDeps };

export const createActivities = (deps: ActivityDeps) => ({
  ...createNotificationsActivities(deps),
  ...createTenantLifecycleActivities(deps.tenant),
  ...createExecutionLogActivities({ pool: deps.tenant.platformPool, config: deps.tenant.config }),
  ...createRotationActivities({
    pool: deps.tenant.platformPool,
    // the rotation writes the store (no cache: it reads nothing back)
    store: new PgSecretStore(deps.tenant.platformPool, deps.tenant.config.SECRETS_KEY, 0),
    secrets: deps.tenant.secrets,
    eventsUrl: deps.tenant.config.EVENTS_URL,
  }),
});

export type Activities = ReturnType<typeof createActivities>;
