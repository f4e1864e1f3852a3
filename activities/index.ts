/**
 * All activities, built from explicit dependencies. The worker builds the dependencies once and
 * registers `createActivities(deps)`; workflows import only the type.
 */
import { createNotificationsActivities, type NotificationsDeps } from './notifications.js';

export type ActivityDeps = NotificationsDeps;

export const createActivities = (deps: ActivityDeps) => ({
  ...createNotificationsActivities(deps),
});

export type Activities = ReturnType<typeof createActivities>;
