/** The platform's own records of a tenant: the subdomain reservation, the tenants row, the status mirror. */
import { ApplicationFailure } from '@temporalio/common';
import { recordTenantStatus, reserveSubdomain, SubdomainTakenError } from '../domain/tenants/tenant-records.js';
import { TenantErrorType, type TenantClientSpec, type TenantStatus } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

export const createTenantRegistryActivities = ({ config, platformPool }: PlatformDeps) => ({
  /** Taken by another TenantClient: a non-retryable SubdomainTaken failure. */
  async reserveSubdomain(input: { name: string; uid: string; spec: TenantClientSpec }) {
    try {
      return await reserveSubdomain(platformPool, { ...input, tenantDomain: config.TENANT_DOMAIN });
    } catch (err) {
      if (err instanceof SubdomainTakenError)
        throw ApplicationFailure.create({
          type: TenantErrorType.SubdomainTaken,
          message: err.message,
          nonRetryable: true,
        });
      throw err;
    }
  },

  /** A missing row (the apply that started the workflow has not committed yet) is retried. */
  async recordTenantStatus(input: { name: string; uid: string; status: TenantStatus }): Promise<void> {
    if (!(await recordTenantStatus(platformPool, input)))
      throw new Error(`tenant_clients row ${input.name} (${input.uid}) not there yet`);
  },
});
