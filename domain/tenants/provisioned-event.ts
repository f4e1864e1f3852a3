/**
 * The CloudEvent a tenant raises once it is Ready (§3.2, §6): emitted by the lifecycle's
 * publish step (activities/tenant-events.ts), consumed by services/events (workspace entry,
 * first welcome e-mail).
 */
import type { ErpVersion, Tier } from './types.js';

/** CloudEvent type emitted once a tenant is Ready. */
export const CLIENT_PROVISIONED = 'client.provisioned';

/** The `data` of a `client.provisioned` CloudEvent. */
export interface ClientProvisionedData {
  /** TenantClient name (= subdomain). */
  tenant: string;
  /** Display name of the workspace entry; defaults to the tenant name. */
  workspace?: string;
  projectId?: number;
  ownerEmail: string;
  ownerName: string;
  tier: Tier;
  erpVersion: ErpVersion;
}
