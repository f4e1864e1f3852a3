/** Every activity of the tenant lifecycle, one factory per resource (see tenant-*.ts). */
import { createTenantBackupActivities } from './tenant-backups.js';
import { createTenantChatActivities } from './tenant-chat.js';
import { createTenantErpActivities } from './tenant-erp.js';
import { createTenantErpInstallActivities } from './tenant-erp-install.js';
import type { PlatformDeps } from './deps.js';
import { createTenantEventActivities } from './tenant-events.js';
import { createTenantFilestoreActivities } from './tenant-filestore.js';
import { createTenantHealthActivities } from './tenant-health.js';
import { createTenantRegistryActivities } from './tenant-registry.js';
import { createTenantRouteActivities } from './tenant-route.js';
import { createTenantSignInActivities } from './tenant-sign-in.js';

export type { PlatformDeps };

export const createTenantLifecycleActivities = (deps: PlatformDeps) => ({
  ...createTenantRegistryActivities(deps),
  ...createTenantErpActivities(deps),
  ...createTenantErpInstallActivities(deps),
  ...createTenantRouteActivities(deps),
  ...createTenantFilestoreActivities(deps),
  ...createTenantBackupActivities(deps),
  ...createTenantChatActivities(deps),
  ...createTenantSignInActivities(deps),
  ...createTenantHealthActivities(deps),
  ...createTenantEventActivities(deps),
});
